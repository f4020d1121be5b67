#include "runtime/instant_program.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "runtime/host_view.h"

namespace trn::runtime {
namespace {

using instant::Kernel;

// How an op maps onto a kernel: its inputs and scalar parameter by argument name.
struct OpForm {
  std::string_view name;  // base name without "aten::" and without the in-place '_'
  Kernel kernel;
  const char* inputs[3];
  const char* param;  // nullptr: none (1.0)
  float param_sign;
};

constexpr OpForm kForms[] = {
    {"add", Kernel::kAdd, {"self", "other"}, "alpha", 1},
    {"sub", Kernel::kAdd, {"self", "other"}, "alpha", -1},
    {"mul", Kernel::kMul, {"self", "other"}, nullptr, 1},
    {"div", Kernel::kDiv, {"self", "other"}, nullptr, 1},
    {"neg", Kernel::kNeg, {"self"}, nullptr, 1},
    {"relu", Kernel::kRelu, {"self"}, nullptr, 1},
    {"sqrt", Kernel::kSqrt, {"self"}, nullptr, 1},
    {"rsqrt", Kernel::kRsqrt, {"self"}, nullptr, 1},
    {"reciprocal", Kernel::kReciprocal, {"self"}, nullptr, 1},
    {"exp", Kernel::kExp, {"self"}, nullptr, 1},
    {"log", Kernel::kLog, {"self"}, nullptr, 1},
    {"tanh", Kernel::kTanh, {"self"}, nullptr, 1},
    {"sigmoid", Kernel::kSigmoid, {"self"}, nullptr, 1},
    {"gelu", Kernel::kGelu, {"self"}, nullptr, 1},
    {"addcmul", Kernel::kAddcmul, {"self", "tensor1", "tensor2"}, "value", 1},
    {"addcdiv", Kernel::kAddcdiv, {"self", "tensor1", "tensor2"}, "value", 1},
    {"lerp", Kernel::kLerp, {"self", "end"}, "weight", 1},
    {"pow", Kernel::kPow, {"self"}, "exponent", 1},
    {"copy", Kernel::kCopy, {"src"}, nullptr, 1},
    {"abs", Kernel::kAbs, {"self"}, nullptr, 1},
    {"fill", Kernel::kCopy, {"value"}, nullptr, 1},
    {"zero", Kernel::kCopy, {}, nullptr, 1},  // (a constant 0 input)
    {"tanh_backward", Kernel::kTanhBackward, {"grad_output", "output"}, nullptr, 1},
    {"sigmoid_backward", Kernel::kSigmoidBackward, {"grad_output", "output"}, nullptr, 1},
    {"threshold_backward", Kernel::kThresholdBackward, {"grad_output", "self"}, "threshold", 1},
    {"gelu_backward", Kernel::kGeluBackward, {"grad_output", "self"}, nullptr, 1},
};

// Overloads a form accepts (the others: rounding modes, tensor weights, scalar bases, ...).
bool OverloadAccepted(std::string_view base, bool in_place, std::string_view overload) {
  if (base == "lerp") return overload == "Scalar" || overload == "Scalar_out";
  if (base == "pow") return in_place ? overload == "Scalar" : (overload == "Tensor_Scalar" || overload == "Tensor_Scalar_out");
  if (base == "copy" || base == "zero") return in_place && overload.empty();
  if (base == "fill") return in_place && (overload == "Scalar" || overload == "Tensor");
  if (base.size() > 9 && base.substr(base.size() - 9) == "_backward") return !in_place && (overload.empty() || overload == "grad_input");
  return overload.empty() || overload == "out" || overload == "Tensor" || overload == "Scalar" || overload == "Scalar_out";
}

int ArgIndex(const c10::FunctionSchema& schema, std::string_view name) {
  const auto& args = schema.arguments();
  for (size_t j = 0; j < args.size(); ++j) {
    if (args[j].name() == name) return static_cast<int>(j);
  }
  return -1;
}

bool IsRealScalar(const c10::IValue& v) { return v.isDouble() || v.isInt() || v.isBool(); }

bool ZeroDimReadable(const at::Tensor& t) {
  if (!t.defined() || t.dim() != 0 || !t.has_storage()) return false;
  switch (t.scalar_type()) {
    case at::kFloat:
    case at::kDouble:
    case at::kLong:
    case at::kInt:
    case at::kBool:
      return !t.is_conj() && !t.is_neg();
    default:
      return false;
  }
}

// The value of a 0-d tensor as float, as ATen's kernels take a CPU scalar operand.
float ReadZeroDim(const at::Tensor& t) {
  const char* p = static_cast<const char*>(t.storage().data()) + t.storage_offset() * t.element_size();
  switch (t.scalar_type()) {
    case at::kFloat:
      return *reinterpret_cast<const float*>(p);
    case at::kDouble:
      return static_cast<float>(*reinterpret_cast<const double*>(p));
    case at::kLong:
      return static_cast<float>(*reinterpret_cast<const int64_t*>(p));
    case at::kInt:
      return static_cast<float>(*reinterpret_cast<const int32_t*>(p));
    default:
      return *reinterpret_cast<const bool*>(p) ? 1.0f : 0.0f;
  }
}

float* DataOf(const at::Tensor& t) {
  return static_cast<float*>(t.storage().mutable_data()) + t.storage_offset();
}

const at::Tensor& TensorAt(const OpRecord& r, int arg) {
  return arg < 0 ? r.outputs[0].toTensor() : r.args[static_cast<size_t>(arg)].toTensor();
}

const c10::StorageImpl* StorageOf(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

bool FullOperand(const at::Tensor& t, c10::IntArrayRef sizes) {
  return t.defined() && IsDeviceTensor(t) && t.has_storage() && t.scalar_type() == at::kFloat &&
         t.sizes() == sizes && t.is_contiguous() && !t.is_conj() && !t.is_neg();
}

// One op of a chain being formed.
struct ProtoIn {
  uint8_t kind = 0;  // Src::Kind
  int16_t arg = -1;
  int32_t def = -1;  // the chain op (position) whose value it reads, or -1 (from memory)
};
struct Proto {
  const OpForm* form = nullptr;
  int32_t op = 0;
  int nin = 0;
  ProtoIn in[3];
  int16_t param_arg = -1;
  int16_t dest_arg = -1;
  const c10::StorageImpl* dest = nullptr;
};

// The op's form and arguments when it can join a chain (dest sizes `*sizes`), else nullopt.
std::optional<Proto> Classify(const OpRecord& r, int32_t index, std::vector<int64_t>* sizes) {
  const c10::FunctionSchema& schema = r.op.schema();
  std::string_view name = schema.name();
  if (name.substr(0, 6) != "aten::") return std::nullopt;
  name.remove_prefix(6);
  const bool in_place = !name.empty() && name.back() == '_' && name.size() > 1 && name[name.size() - 2] != '_';
  if (in_place) name.remove_suffix(1);
  const OpForm* form = nullptr;
  for (const OpForm& f : kForms) {
    if (f.name == name) form = &f;
  }
  if (form == nullptr || !OverloadAccepted(name, in_place, schema.overload_name())) return std::nullopt;
  Proto p;
  p.form = form;
  p.op = index;
  // The result: the out= argument, the in-place self, or the fresh output.
  int out_arg = -1;
  for (size_t j = 0; j < schema.arguments().size(); ++j) {
    if (schema.arguments()[j].is_out()) out_arg = out_arg < 0 ? static_cast<int>(j) : -2;
  }
  if (out_arg == -2) return std::nullopt;
  if (out_arg < 0 && in_place) out_arg = 0;
  if (out_arg < 0 && (r.outputs.size() != 1 || !r.outputs[0].isTensor())) return std::nullopt;
  if (out_arg >= static_cast<int>(r.args.size()) || (out_arg >= 0 && !r.args[out_arg].isTensor())) return std::nullopt;
  p.dest_arg = static_cast<int16_t>(out_arg);
  const at::Tensor& dest = TensorAt(r, out_arg);
  if (!FullOperand(dest, dest.sizes())) return std::nullopt;
  p.dest = StorageOf(dest);
  *sizes = dest.sizes().vec();
  if (form->kernel == Kernel::kGelu || form->kernel == Kernel::kGeluBackward) {
    const int a = ArgIndex(schema, "approximate");
    if (a >= 0 && a < static_cast<int>(r.args.size()) &&
        !(r.args[a].isString() && r.args[a].toStringRef() == "none")) {
      return std::nullopt;
    }
  }
  bool any_full = false;
  for (const char* in_name : form->inputs) {
    if (in_name == nullptr) break;
    const int a = (in_place && form->kernel != Kernel::kCopy && std::string_view(in_name) == "self") ? 0 : ArgIndex(schema, in_name);
    if (a < 0 || a >= static_cast<int>(r.args.size())) return std::nullopt;
    ProtoIn& in = p.in[p.nin++];
    in.arg = static_cast<int16_t>(a);
    const c10::IValue& v = r.args[a];
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (FullOperand(t, dest.sizes())) {
        in.kind = 0;  // kMem for now; resolved when the chain is finished
        any_full = true;
      } else if (ZeroDimReadable(t)) {
        in.kind = 3;  // kZeroDim
      } else {
        return std::nullopt;
      }
    } else if (IsRealScalar(v)) {
      in.kind = 2;  // kScalar
    } else {
      return std::nullopt;
    }
  }
  if (p.nin == 0) {  // zero_
    p.in[p.nin++].kind = 5;  // kZero
  }
  if (!any_full && form->kernel != Kernel::kCopy) return std::nullopt;  // (a 0-d op broadcast: not ours)
  if (form->param != nullptr) {
    const int a = ArgIndex(schema, form->param);
    if (a >= 0 && a < static_cast<int>(r.args.size())) {
      if (!IsRealScalar(r.args[a])) return std::nullopt;
      p.param_arg = static_cast<int16_t>(a);
    }
  }
  return p;
}

// Each storage a chain accesses: one view offset (full-size accesses), or a 0-d read.
struct Access {
  int64_t offset = 0;
  bool zero_dim = false;
};

}  // namespace

std::shared_ptr<const InstantProgram> InstantProgram::Build(const std::vector<OpRecord>& ops,
                                                            const std::vector<at::Tensor>& outputs) {
  auto program = std::make_shared<InstantProgram>();
  const int32_t n = static_cast<int32_t>(ops.size());
  // The last op touching each storage, and the storages read after the group.
  absl::flat_hash_map<const c10::StorageImpl*, int32_t> last_touch;
  for (int32_t i = 0; i < n; ++i) {
    auto touch = [&](const at::Tensor& t) {
      if (t.defined() && t.has_storage()) last_touch[StorageOf(t)] = i;
    };
    for (const c10::IValue& a : ops[i].args) ForEachTensor(a, touch);
    for (const c10::IValue& o : ops[i].outputs) ForEachTensor(o, touch);
  }
  absl::flat_hash_set<const c10::StorageImpl*> live_after;
  for (const at::Tensor& t : outputs) {
    if (t.defined() && t.has_storage()) live_after.insert(StorageOf(t));
  }

  std::vector<Proto> chain;
  std::vector<int64_t> chain_sizes;
  absl::flat_hash_map<const c10::StorageImpl*, Access> accesses;
  absl::flat_hash_map<const c10::StorageImpl*, int32_t> current;  // storage -> chain op of its value

  auto finish = [&](int32_t end) {
    if (chain.empty()) return;
    Chain c;
    c.numel = 1;
    for (int64_t s : chain_sizes) c.numel *= s;
    const int32_t m = static_cast<int32_t>(chain.size());
    absl::flat_hash_map<const c10::StorageImpl*, int32_t> last_writer;
    for (int32_t k = 0; k < m; ++k) last_writer[chain[k].dest] = k;
    std::vector<bool> stored(m, false), used(m, false);
    std::vector<int32_t> last_use(m, -1);
    for (int32_t k = 0; k < m; ++k) {
      const c10::StorageImpl* s = chain[k].dest;
      stored[k] = last_writer[s] == k && (live_after.contains(s) || last_touch[s] >= end);
      for (int j = 0; j < chain[k].nin; ++j) {
        const int32_t d = chain[k].in[j].def;
        if (d >= 0) {
          used[d] = true;
          last_use[d] = k;
        }
      }
    }
    std::vector<int16_t> scratch_of(m, -1), free_tiles;
    int16_t tiles = 0;
    for (int32_t k = 0; k < m; ++k) {
      const Proto& p = chain[k];
      ChainOp op;
      op.kernel = p.form->kernel;
      op.op = p.op;
      op.param_arg = p.param_arg;
      op.param_sign = p.form->param_sign;
      for (int j = 0; j < p.nin; ++j) {
        const ProtoIn& in = p.in[j];
        op.in[j].arg = in.arg;
        if (in.def >= 0 && !stored[in.def]) {
          op.in[j].kind = Src::kScratch;
          op.in[j].scratch = scratch_of[in.def];
        } else {
          op.in[j].kind = static_cast<Src::Kind>(in.kind);
        }
      }
      for (int j = 0; j < p.nin; ++j) {  // tiles whose value is read for the last time here
        const int32_t d = p.in[j].def;
        if (d >= 0 && last_use[d] == k && scratch_of[d] >= 0) {
          free_tiles.push_back(scratch_of[d]);
          scratch_of[d] = -1;
        }
      }
      if (stored[k]) {
        op.out.kind = Src::kMem;
        op.out.arg = p.dest_arg;
      } else if (used[k]) {
        if (free_tiles.empty()) {
          free_tiles.push_back(tiles++);
        }
        scratch_of[k] = free_tiles.back();
        free_tiles.pop_back();
        op.out.kind = Src::kScratch;
        op.out.scratch = scratch_of[k];
      }  // else: dead, kNone
      c.ops.push_back(op);
    }
    c.scratch = tiles;
    program->steps_.push_back(Step{chain.front().op, end, static_cast<int32_t>(program->chains_.size())});
    program->chains_.push_back(std::move(c));
    program->chained_ops_ += m;
    chain.clear();
    accesses.clear();
    current.clear();
  };

  std::vector<int64_t> sizes;
  for (int32_t i = 0; i < n; ++i) {
    std::optional<Proto> p = Classify(ops[i], i, &sizes);
    if (p.has_value() && !chain.empty() && sizes != chain_sizes) finish(i);
    if (!p.has_value()) {
      finish(i);
      program->steps_.push_back(Step{i, i + 1, -1});
      continue;
    }
    // Every access to a storage in one chain: the same view, and 0-d reads of storages the chain
    // does not otherwise use. Else the chain ends before the op (and the op alone must pass).
    for (int attempt = 0; attempt < 2; ++attempt) {
      bool ok = true;
      absl::flat_hash_map<const c10::StorageImpl*, Access> added;
      auto check = [&](const at::Tensor& t, bool zero_dim) {
        const c10::StorageImpl* s = StorageOf(t);
        const Access a{zero_dim ? 0 : t.storage_offset(), zero_dim};
        for (auto* map : {&accesses, &added}) {
          auto it = map->find(s);
          if (it != map->end() && (it->second.zero_dim || zero_dim || it->second.offset != a.offset)) ok = false;
        }
        added.emplace(s, a);
      };
      const OpRecord& r = ops[i];
      for (int j = 0; j < p->nin; ++j) {
        if (p->in[j].kind == 0 || p->in[j].kind == 3) check(r.args[p->in[j].arg].toTensor(), p->in[j].kind == 3);
      }
      check(TensorAt(r, p->dest_arg), false);
      if (ok) {
        accesses.insert(added.begin(), added.end());
        break;
      }
      if (attempt == 1 || chain.empty()) {
        p.reset();
        break;
      }
      finish(i);
    }
    if (!p.has_value()) {
      finish(i);
      program->steps_.push_back(Step{i, i + 1, -1});
      continue;
    }
    for (int j = 0; j < p->nin; ++j) {  // reads of values written earlier in the chain
      if (p->in[j].kind != 0) continue;
      auto it = current.find(StorageOf(ops[i].args[p->in[j].arg].toTensor()));
      if (it != current.end()) p->in[j].def = it->second;
    }
    if (chain.empty()) chain_sizes = sizes;
    current[p->dest] = static_cast<int32_t>(chain.size());
    chain.push_back(*p);
  }
  finish(n);
  return program;
}

bool InstantProgram::RunChain(int32_t index, const std::vector<OpRecord>& ops) const {
  const Chain& chain = chains_[static_cast<size_t>(index)];
  thread_local std::vector<instant::TileCall> calls;
  thread_local std::vector<uint8_t> in_memory;  // bit j: input j advances with the tile; bit 3: out
  thread_local std::vector<float> scratch;
  calls.clear();
  in_memory.clear();
  // (grown only: resizing down and up again would zero the tiles each time)
  const size_t scratch_elems = static_cast<size_t>(chain.scratch) * kTileElems;
  if (scratch.size() < scratch_elems) scratch.resize(scratch_elems);
  for (const ChainOp& op : chain.ops) {
    if (op.out.kind == Src::kNone) continue;  // nothing reads it
    const OpRecord& r = ops[static_cast<size_t>(op.op)];
    instant::TileCall call;
    call.kernel = op.kernel;
    uint8_t mask = 0;
    for (int j = 0; j < instant::KernelInputs(op.kernel); ++j) {
      const Src& in = op.in[j];
      switch (in.kind) {
        case Src::kMem:
          call.in[j] = DataOf(TensorAt(r, in.arg));
          mask |= static_cast<uint8_t>(1u << j);
          break;
        case Src::kScratch:
          call.in[j] = scratch.data() + static_cast<int64_t>(in.scratch) * kTileElems;
          break;
        case Src::kScalar: {
          const c10::IValue& v = r.args[static_cast<size_t>(in.arg)];
          if (!IsRealScalar(v)) return false;
          call.sv[j] = static_cast<float>(v.toScalar().toDouble());
          break;
        }
        case Src::kZeroDim: {
          const c10::IValue& v = r.args[static_cast<size_t>(in.arg)];
          if (!v.isTensor() || !ZeroDimReadable(v.toTensor())) return false;
          call.sv[j] = ReadZeroDim(v.toTensor());
          break;
        }
        case Src::kZero:
          call.sv[j] = 0;
          break;
        case Src::kNone:
          return false;
      }
    }
    double param = 1;
    if (op.param_arg >= 0) {
      const c10::IValue& v = r.args[static_cast<size_t>(op.param_arg)];
      if (!IsRealScalar(v)) return false;
      param = v.toScalar().toDouble();
    }
    call.p = static_cast<float>(op.param_sign * param);
    if (op.out.kind == Src::kMem) {
      call.out = DataOf(TensorAt(r, op.out.arg));
      mask |= 8;
    } else {
      call.out = scratch.data() + static_cast<int64_t>(op.out.scratch) * kTileElems;
    }
    calls.push_back(call);
    in_memory.push_back(mask);
  }
  const size_t m = calls.size();
  for (int64_t offset = 0; offset < chain.numel; offset += kTileElems) {
    const int64_t len = std::min(kTileElems, chain.numel - offset);
    for (size_t k = 0; k < m; ++k) {
      instant::TileCall call = calls[k];
      const uint8_t mask = in_memory[k];
      for (int j = 0; j < 3; ++j) {
        if ((mask >> j) & 1u) call.in[j] += offset;
      }
      if (mask & 8u) call.out += offset;
      instant::RunTile(call, len);
    }
  }
  return true;
}

}  // namespace trn::runtime
