// See device_check.h. PyTorch decides per op in native_functions.yaml (`device_check: NoCheck`
// marks ops whose kernels accept other devices or check themselves); most NoCheck entries are
// TensorIterator ops, which only accept 0-dim CPU tensors, allowed here for every op. What
// remains is the list below.
#include "trace/device_check.h"

#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/host_view.h"
#include "base/op_error.h"
#include "runtime/op_runner.h"

namespace trn::trace {
namespace {

constexpr std::string_view kAnyArgument = "*";

// Ops that take host tensors next to device tensors by design, with the argument allowed to be
// on the host ("*": any argument).
const absl::flat_hash_map<std::string, std::string_view>& HostArgAllowList() {
  static const auto* allow = new absl::flat_hash_map<std::string, std::string_view>{
      // Copies between devices (the device side of .to(), .cpu(), copy_, x[...] = host_tensor).
      {"aten::copy_", kAnyArgument},
      {"aten::_copy_from", kAnyArgument},
      {"aten::_copy_from_and_resize", kAnyArgument},
      {"aten::_to_copy", kAnyArgument},
      {"aten::to", kAnyArgument},
      // Storage ops: set_ points a tensor at another's storage; is_set_to compares them.
      {"aten::set_", kAnyArgument},
      {"aten::is_set_to", kAnyArgument},
      // Advanced indexing: CUDA accepts CPU index tensors (it moves them to the device).
      {"aten::index", "indices"},
      {"aten::_unsafe_index", "indices"},
      {"aten::index_put", "indices"},
      {"aten::index_put_", "indices"},
      {"aten::_index_put_impl_", "indices"},
      {"aten::_unsafe_index_put", "indices"},
      // nn.utils.rnn.pack_padded_sequence: the lengths must be a CPU int64 tensor.
      {"aten::_pack_padded_sequence", "lengths"},
      // CTC loss: lengths may be CPU tensors (CUDA's kernel reads them on the host).
      {"aten::ctc_loss", kAnyArgument},
      {"aten::_ctc_loss", kAnyArgument},
      {"aten::_ctc_loss_backward", kAnyArgument},
      {"aten::_use_cudnn_ctc_loss", kAnyArgument},
  };
  return *allow;
}

bool HostArgAllowed(const std::string& op, std::string_view arg) {
  const auto& allow = HostArgAllowList();
  auto it = allow.find(op);
  return it != allow.end() && (it->second == kAnyArgument || it->second == arg);
}

}  // namespace

absl::Status CheckSameDevice(const c10::OperatorHandle& op, const std::vector<c10::IValue>& args) {
  const c10::FunctionSchema& schema = op.schema();
  std::optional<c10::Device> device;  // (devices, not tensor pointers: list elements are temporaries)
  std::optional<c10::Device> host;
  std::string host_arg;
  for (size_t j = 0; j < args.size() && j < schema.arguments().size(); ++j) {
    int64_t index = 0;
    const bool is_list = args[j].isTensorList() || args[j].isOptionalTensorList();
    runtime::ForEachTensor(args[j], [&](const at::Tensor& t) {
      const int64_t i = index++;
      if (!t.defined()) {
        return;
      }
      if (runtime::IsDeviceTensor(t)) {
        if (!device.has_value()) device = t.device();
        return;
      }
      if (host.has_value() || t.dim() == 0) {
        return;  // a 0-dim host tensor is a wrapped scalar: allowed on every op, as on CUDA
      }
      const std::string& name = schema.arguments()[j].name();
      if (HostArgAllowed(schema.name(), name)) {
        return;
      }
      host = t.device();
      host_arg = is_list ? absl::StrCat(name, "[", i, "]") : name;
    });
  }
  if (!host.has_value() || !device.has_value()) {
    return absl::OkStatus();
  }
  return base::MakeOpError(base::ErrorKind::kRuntime, absl::StrCat(
      "Expected all tensors to be on the same device, but got ", host_arg, " is on ", host->str(),
      ", different from other tensors on ", device->str(), " (when checking argument in method ",
      runtime::OpName(op), ")"));
}

}  // namespace trn::trace
