// Device kernels for PyTorch's fused RNN cells, as compositions of recorded ops.
//
// nn.LSTM / nn.GRU / nn.LSTMCell / nn.GRUCell on a PrivateUse1 device take the fused-cell path
// of ATen's RNN.cpp (as CUDA does): per step one `_thnn_fused_lstm_cell` / `_thnn_fused_gru_cell`
// on the pre-computed gate products, and their `*_backward_impl` / `_backward` in the backward
// pass. Those ops only have CUDA kernels, so the host fallback cannot run them. Here each is
// written as the elementwise ops it stands for (the CUDA kernels' math: gate order i, f, g, o for
// LSTM and r, z, n for GRU; the same workspace layouts, so the autograd formulas that pass the
// workspace from forward to backward stay valid). The ops they issue are recorded like any other
// op: they carry the model's source line, fuse into groups and run compiled.
//
// Thread-safety: stateless; the recorded ops go through the thread-safe stream.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

namespace trn::trace {
namespace {

void CheckGates(const char* op, const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                const at::Tensor& prev, int64_t factor) {
  TORCH_CHECK(input_gates.dim() == 2 && input_gates.sizes() == hidden_gates.sizes(), op,
              ": input_gates and hidden_gates must be equal 2-D shapes, got ", input_gates.sizes(), " and ",
              hidden_gates.sizes());
  TORCH_CHECK(prev.dim() == 2 && prev.size(0) == input_gates.size(0) && prev.size(1) * factor == input_gates.size(1),
              op, ": the previous state must be [batch, gates/", factor, "] = [", input_gates.size(0), ", ",
              input_gates.size(1) / factor, "], got ", prev.sizes());
}

// input_gates + hidden_gates (+ input_bias + hidden_bias), summed in the CUDA kernel's order.
at::Tensor GateSum(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                   const std::optional<at::Tensor>& input_bias, const std::optional<at::Tensor>& hidden_bias) {
  at::Tensor gates = input_gates + hidden_gates;
  if (input_bias.has_value() && input_bias->defined()) gates = gates + *input_bias;
  if (hidden_bias.has_value() && hidden_bias->defined()) gates = gates + *hidden_bias;
  return gates;
}

// Returns (hy, cy, workspace = [sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)]).
std::tuple<at::Tensor, at::Tensor, at::Tensor> FusedLstmCell(const at::Tensor& input_gates,
                                                              const at::Tensor& hidden_gates, const at::Tensor& cx,
                                                              const std::optional<at::Tensor>& input_bias,
                                                              const std::optional<at::Tensor>& hidden_bias) {
  CheckGates("_thnn_fused_lstm_cell", input_gates, hidden_gates, cx, 4);
  const std::vector<at::Tensor> g = GateSum(input_gates, hidden_gates, input_bias, hidden_bias).chunk(4, 1);
  at::Tensor i = at::sigmoid(g[0]);
  at::Tensor f = at::sigmoid(g[1]);
  at::Tensor c = at::tanh(g[2]);
  at::Tensor o = at::sigmoid(g[3]);
  at::Tensor cy = f * cx + i * c;
  at::Tensor hy = o * at::tanh(cy);
  return {hy, cy, at::cat({i, f, c, o}, 1)};
}

// Returns (grad_gates, grad_cx, grad_bias); grad_bias is undefined without biases.
std::tuple<at::Tensor, at::Tensor, at::Tensor> FusedLstmCellBackward(const std::optional<at::Tensor>& grad_hy,
                                                                      const std::optional<at::Tensor>& grad_cy,
                                                                      const at::Tensor& cx, const at::Tensor& cy,
                                                                      const at::Tensor& workspace, bool has_bias) {
  const bool has_hy = grad_hy.has_value() && grad_hy->defined();
  const bool has_cy = grad_cy.has_value() && grad_cy->defined();
  if (!has_hy && !has_cy) return {};
  TORCH_CHECK(workspace.dim() == 2 && workspace.size(1) == 4 * cx.size(-1),
              "_thnn_fused_lstm_cell_backward_impl: workspace must be [batch, 4*hidden], got ", workspace.sizes());
  const std::vector<at::Tensor> w = workspace.chunk(4, 1);
  const at::Tensor &i = w[0], &f = w[1], &c = w[2], &o = w[3];
  at::Tensor tanh_cy = at::tanh(cy);
  // d(cy) = grad_hy * o * (1 - tanh(cy)^2) + grad_cy
  at::Tensor gcy;
  at::Tensor go;
  if (has_hy) {
    gcy = *grad_hy * o * (1 - tanh_cy * tanh_cy);
    go = *grad_hy * tanh_cy * (1 - o) * o;
    if (has_cy) gcy = gcy + *grad_cy;
  } else {
    gcy = *grad_cy;
    go = at::zeros_like(o);
  }
  at::Tensor gi = gcy * c * (1 - i) * i;
  at::Tensor gf = gcy * cx * (1 - f) * f;
  at::Tensor gc = gcy * i * (1 - c * c);
  at::Tensor grad_gates = at::cat({gi, gf, gc, go}, 1);
  at::Tensor grad_cx = gcy * f;
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, grad_cx, grad_bias};
}

// Returns (hy, workspace = [r, z, n, hx, hidden_n + hidden_bias_n]).
std::tuple<at::Tensor, at::Tensor> FusedGruCell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
                                                const std::optional<at::Tensor>& hidden_bias) {
  CheckGates("_thnn_fused_gru_cell", input_gates, hidden_gates, hx, 3);
  const bool biased = input_bias.has_value() && input_bias->defined();
  std::vector<at::Tensor> gi = input_gates.chunk(3, 1);
  std::vector<at::Tensor> gh = hidden_gates.chunk(3, 1);
  std::vector<at::Tensor> bi, bh;
  if (biased) {
    bi = input_bias->chunk(3, 0);
    bh = hidden_bias->chunk(3, 0);
  }
  auto gate = [&](int k) {
    at::Tensor s = gi[k] + gh[k];
    return biased ? s + bi[k] + bh[k] : s;
  };
  at::Tensor r = at::sigmoid(gate(0));
  at::Tensor z = at::sigmoid(gate(1));
  at::Tensor hn = biased ? gh[2] + bh[2] : gh[2];
  at::Tensor in = biased ? gi[2] + bi[2] : gi[2];
  at::Tensor n = at::tanh(in + r * hn);
  at::Tensor hy = n + z * (hx - n);
  return {hy, at::cat({r, z, n, hx, hn}, 1)};
}

// Returns (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias).
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> FusedGruCellBackward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  TORCH_CHECK(grad_hy.dim() == 2 && workspace.dim() == 2 && workspace.size(0) == grad_hy.size(0) &&
                  workspace.size(1) == 5 * grad_hy.size(1),
              "_thnn_fused_gru_cell_backward: workspace must be [batch, 5*hidden] for grad_hy ", grad_hy.sizes(),
              ", got ", workspace.sizes());
  const std::vector<at::Tensor> w = workspace.chunk(5, 1);
  const at::Tensor &r = w[0], &z = w[1], &n = w[2], &hx = w[3], &hn = w[4];
  at::Tensor gz = grad_hy * (hx - n) * (1 - z) * z;
  at::Tensor grad_hx = grad_hy * z;
  at::Tensor gn = grad_hy * (1 - z) * (1 - n * n);
  at::Tensor ghn = gn * r;
  at::Tensor gr = gn * hn * (1 - r) * r;
  at::Tensor grad_input_gates = at::cat({gr, gz, gn}, 1);
  at::Tensor grad_hidden_gates = at::cat({gr, gz, ghn}, 1);
  at::Tensor grad_input_bias, grad_hidden_bias;
  if (has_bias) {
    grad_input_bias = grad_input_gates.sum(0);
    grad_hidden_bias = grad_hidden_gates.sum(0);
  }
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

}  // namespace
}  // namespace trn::trace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(trn::trace::FusedLstmCell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(trn::trace::FusedLstmCellBackward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(trn::trace::FusedGruCell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(trn::trace::FusedGruCellBackward));
}
