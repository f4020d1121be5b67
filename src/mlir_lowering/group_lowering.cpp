#include "mlir_lowering/group_lowering.h"

#include <ATen/ops/empty.h>
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/source_table.h"
#include "mlir_lowering/group_views.h"
#include "mlir_lowering/host_passes.h"
#include "mlir_lowering/lowering_registry.h"
#include "runtime/host_view.h"
#include "runtime/op_runner.h"
#include "runtime/schema_util.h"

namespace trn::mlir_lowering {
namespace {

bool IsDevice(const c10::IValue& v) { return v.isTensor() && runtime::IsDeviceTensor(v.toTensor()); }

}  // namespace

absl::Status CutHere(absl::string_view why) { return absl::AbortedError(why); }

GroupLowering::GroupLowering(const Target& target, bool emit)
    : target_(target), ir_(emit ? std::make_unique<IrEmitter>() : nullptr) {}

GroupLowering::~GroupLowering() = default;

GroupLowering::Buffer& GroupLowering::BufferOf(const at::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  auto [it, inserted] = buffer_index_.try_emplace(s, static_cast<int>(buffers_.size()));
  if (inserted) {
    buffers_.emplace_back();
    buffers_.back().id = it->second;
    buffers_.back().storage = s;
  }
  return buffers_[it->second];
}

void GroupLowering::NoteTensors(const runtime::OpRecord& record) {
  auto note = [&](const c10::IValue& v) {
    runtime::ForEachTensor(v, [&](const at::Tensor& t) {
      if (t.defined() && runtime::IsDeviceTensor(t)) {
        BufferOf(t).impls.insert(t.unsafeGetTensorImpl());
      }
    });
  };
  for (const c10::IValue& a : record.args) {
    note(a);
  }
  for (const c10::IValue& o : record.outputs) {
    note(o);
  }
}

absl::Status GroupLowering::Add(const runtime::OpRecord& record) {
  const OpLowering* lowering = LoweringRegistry::Global().Find(record.op);
  if (lowering == nullptr) {
    return absl::UnimplementedError(absl::StrCat("no lowering for ", runtime::OpName(record.op)));
  }
  ops_.push_back(&record);
  NoteTensors(record);
  if (ir_ != nullptr) {
    const base::SourceLocation line = base::GlobalSourceTable().Lookup(record.source);
    ir_->SetOp(current_index(), record.op.schema().name(), line.file, line.line);
  }
  absl::Status status = lowering->fn(*this, record);
  if (!status.ok() && !IsCut(status) && status.code() != absl::StatusCode::kUnimplemented) {
    return absl::Status(status.code(), absl::StrCat(runtime::OpName(record.op), ": ", status.message()));
  }
  return status;
}

absl::StatusOr<c10::IValue> GroupLowering::Arg(absl::string_view name) const {
  const auto& schema = current().op.schema();
  auto index = schema.argumentIndexWithName(std::string_view(name.data(), name.size()));
  if (!index.has_value() || *index >= static_cast<int>(current().args.size())) {
    return absl::UnimplementedError(absl::StrCat(runtime::OpName(current().op), " has no argument ", name));
  }
  touched_.emplace_back(current_index(), *index);
  return current().args[*index];
}

int64_t GroupLowering::ArgIndex(absl::string_view name) const {
  auto index = current().op.schema().argumentIndexWithName(std::string_view(name.data(), name.size()));
  return index.has_value() ? *index : -1;
}

at::Tensor GroupLowering::Destination(size_t ret) const {
  const runtime::OpRecord& r = current();
  const int j = runtime::AliasedArg(r.op.schema(), ret);
  if (j >= 0 && runtime::WritesArg(r.op.schema(), j)) {
    return r.args[j].toTensor();
  }
  if (ret < r.outputs.size() && r.outputs[ret].isTensor()) {
    return r.outputs[ret].toTensor();
  }
  return at::Tensor();
}

std::vector<std::pair<int64_t, int64_t>> GroupLowering::ValueArgs(int64_t only_op) const {
  const absl::flat_hash_set<std::pair<int64_t, int64_t>> params(param_args_.begin(), param_args_.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const std::pair<int64_t, int64_t>& t : touched_) {
    if ((only_op < 0 || t.first == only_op) && !params.contains(t)) out.push_back(t);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int64_t> GroupLowering::ValueArgsOf(int64_t op_index) const {
  std::vector<int64_t> out;
  for (const auto& [op, arg] : ValueArgs(op_index)) out.push_back(arg);
  return out;
}

absl::StatusOr<View> GroupLowering::Read(const at::Tensor& t) {
  if (!runtime::IsDeviceTensor(t)) {
    return absl::UnimplementedError("reads a host tensor as a tensor");
  }
  TensorGeometry geo = TensorGeometry::Of(t);
  Buffer& b = BufferOf(t);
  for (auto it = b.writes.rbegin(); it != b.writes.rend(); ++it) {
    if (it->geo == geo) {
      it->value_readers.insert(current_index());
      return it->value;
    }
  }
  const Write_* overlapping = nullptr;
  for (const Write_& w : b.writes) {
    if (w.geo.Overlaps(geo)) {
      if (overlapping != nullptr) {
        return CutHere("reads across two views the group wrote");
      }
      overlapping = &w;
    }
  }
  if (overlapping != nullptr) {
    if (std::optional<View> v = Derive(overlapping->geo, overlapping->value, geo)) {
      if (!LinalgCanIndex(*v)) {
        // The next group reads it as an input, through its strides.
        return CutHere("reads a prefix of a dim of a value the group wrote");
      }
      return *v;
    }
    return CutHere("reads a view that is not an affine image of the view the group wrote");
  }
  for (Input& in : b.inputs) {
    if (in.geo == geo) {
      in.readers.insert(current_index());
      return View::Whole(in.value, geo.sizes, geo.dtype);
    }
  }
  if (static_cast<int64_t>(input_tensors_.size()) >= kMaxInputs) {
    return CutHere("the group has as many inputs as an entry point takes");
  }
  const IrValue value = ir_ != nullptr ? ir_->AddInput(geo.sizes, geo.dtype, geo.strides) : IrValue();
  b.inputs.push_back(Input{geo, static_cast<int64_t>(input_tensors_.size()), value, {current_index()}});
  input_tensors_.push_back(t);
  input_geos_.push_back(geo);
  return View::Whole(value, geo.sizes, geo.dtype);
}

absl::StatusOr<Operand> GroupLowering::ReadOperand(const c10::IValue& v, int64_t arg_index) {
  std::optional<c10::Scalar> scalar;
  c10::ScalarType type = c10::kDouble;
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (runtime::IsDeviceTensor(t)) {
      absl::StatusOr<View> view = Read(t);
      if (!view.ok()) {
        return view.status();
      }
      return Operand::Of(std::move(*view));
    }
    if (t.dim() != 0 || !Supported(t.scalar_type())) {
      return absl::UnimplementedError("a host tensor operand with dimensions");
    }
    scalar = t.item();
    type = t.scalar_type();
  } else if (v.isScalar()) {
    scalar = v.toScalar();
    if (scalar->isComplex()) {
      return absl::UnimplementedError("a complex scalar");
    }
    type = scalar->isFloatingPoint() ? c10::kDouble : (scalar->isBoolean() ? c10::kBool : c10::kLong);
  } else {
    return absl::UnimplementedError("an operand that is neither a tensor nor a scalar");
  }
  // Integers travel as f64 too (exact below 2^53; the body converts to the compute dtype).
  const bool exact_in_f64 = c10::isFloatingType(type) ||
                            (c10::isIntegralType(type, /*includeBool=*/false) &&
                             std::abs(scalar->toLong()) < (int64_t{1} << 53));
  if (arg_index < 0 || !exact_in_f64) {
    return Operand::Const(*scalar, type);
  }
  // A runtime scalar. Type promotion already happened (it reads the op's arguments); the body
  // only needs the value, read once at function entry.
  const int64_t k = static_cast<int64_t>(params_.size());
  params_.push_back(scalar->toDouble());
  param_args_.emplace_back(current_index(), arg_index);
  return Operand::Param(ir_ != nullptr ? ir_->Param(k) : IrValue());
}

absl::Status GroupLowering::Write(const at::Tensor& dst, const View& value_in) {
  if (!dst.defined()) {
    return absl::OkStatus();
  }
  TensorGeometry geo = TensorGeometry::Of(dst);
  if (value_in.sizes != geo.sizes) {
    return absl::InternalError(absl::StrCat("the lowering produced sizes [", absl::StrJoin(value_in.sizes, ","),
                                            "] for a destination of sizes [", absl::StrJoin(geo.sizes, ","), "]"));
  }
  View value = value_in;
  if (value.dtype != geo.dtype) {
    value = Pointwise({Operand::Of(value)}, geo.sizes, geo.dtype,
                      [](ScalarBuilder&, const std::vector<Scalar>& a) { return a[0]; });
  }
  Buffer& b = BufferOf(dst);
  const int64_t op = current_index();
  const bool pointwise = ops_[static_cast<size_t>(op)]->op.hasTag(at::Tag::pointwise);
  bool chain = false;
  int64_t first_op = op;
  bool replaced = false;
  for (auto it = b.writes.begin(); it != b.writes.end(); ++it) {
    if (it->geo == geo) {
      chain = pointwise && it->in_place_chain && it->value_readers.contains(op);
      first_op = it->first_op;
      replaced = true;
      b.writes.erase(it);
      break;
    }
  }
  if (!replaced) {
    for (const Input& in : b.inputs) {
      chain = chain || (pointwise && in.geo == geo && in.readers.contains(op));
    }
  }
  for (const Write_& w : b.writes) {
    if (w.geo.Overlaps(geo)) {
      return CutHere("writes a view overlapping another view the group wrote");
    }
  }
  if (++writes_ > kMaxWrites) {
    return CutHere("the group writes as many views as an entry point can return");
  }
  Write_ w{geo, std::move(value), dst, op};
  w.first_op = first_op;
  w.in_place_chain = chain;
  b.writes.push_back(std::move(w));
  return absl::OkStatus();
}

bool GroupLowering::NeedsStaging(const Buffer& b, const Write_& w) const {
  bool overlaps = false;
  for (const Input& in : b.inputs) overlaps = overlaps || in.geo.Overlaps(w.geo);
  if (!overlaps) {
    return false;
  }
  // In-place pointwise updates (`p.mul_(s)`, AdamW's lerp_ / mul_ + addcmul_ / addcdiv_)
  // write their result straight into the input when: the group reads the input once, by the
  // first op of a chain of ops that each read this view's previous value and write it whole,
  // all pointwise; the input is the buffer's only one and this view its only write. Then the
  // old contents are read only on the way to the final value: fusion never duplicates a
  // producer with another use (host_passes.cpp), so each old element is read in the loop that
  // writes it, or in a loop before that one. Staging such outputs cost a scratch buffer and a
  // copy per output, which made optimizer groups slower than op by op.
  if (b.inputs.size() != 1 || b.writes.size() != 1 || !w.in_place_chain) {
    return true;
  }
  const Input& in = b.inputs.front();
  if (!(in.geo == w.geo) || in.readers.size() != 1 || !in.readers.contains(w.first_op)) {
    return true;
  }
  return !w.tensor.is_non_overlapping_and_dense();
}

int64_t GroupLowering::TiedArgument(const Buffer& b, const Write_& w) const {
  if (b.inputs.size() != 1 || !(b.inputs.front().geo == w.geo)) {
    return -1;
  }
  // After %ctx and, when the group has runtime scalars, %params.
  return 1 + (params_.empty() ? 0 : 1) + b.inputs.front().index;
}

View GroupLowering::Pointwise(const std::vector<Operand>& ins, const std::vector<int64_t>& shape,
                              c10::ScalarType out_dtype, const BodyFn& body) {
  if (ir_ == nullptr) {
    return View::Whole(IrValue(), shape, out_dtype);
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<GenericOperand> operands;
  for (const Operand& in : ins) {
    if (in.view.has_value()) {
      operands.push_back(GenericOperand{in.view->base, in.view->dtype, IndexExprs(*in.view, shape)});
    }
  }
  // The output map is the identity, size-1 dims included: every loop dim must appear in some
  // indexing map (IndexExprs drops size-1 dims, which broadcast).
  const GenericOperand out{ir_->Empty(shape, out_dtype), out_dtype, IdentityExprs(rank)};
  const std::vector<IrValue> result =
      ir_->Generic(rank, {}, operands, {out}, [&](ScalarBuilder& b, const std::vector<IrValue>& args) {
        std::vector<Scalar> elems;
        size_t next = 0;
        for (const Operand& in : ins) {
          if (in.view.has_value()) {
            elems.push_back(b.Load(args[next++], in.dtype));
          } else if (in.is_param) {
            elems.push_back(Scalar{in.param, c10::kDouble});
          } else {
            elems.push_back(b.Constant(in.constant, in.dtype));
          }
        }
        return std::vector<IrValue>{b.Store(b.Cast(body(b, elems), out_dtype))};
      });
  return View::Whole(result[0], shape, out_dtype);
}

View GroupLowering::Reduce(const View& in, const std::vector<int64_t>& dims, bool keepdim, c10::ScalarType acc,
                           const c10::Scalar& init, const CombineFn& combine) {
  return ReduceMulti(in, dims, keepdim, {{acc, init}},
                     [&](ScalarBuilder& b, const std::vector<Scalar>& a, const Scalar& x) {
                       return std::vector<Scalar>{combine(b, a[0], x)};
                     })[0];
}

std::vector<View> GroupLowering::ReduceMulti(const View& in, const std::vector<int64_t>& dims, bool keepdim,
                                             const std::vector<std::pair<c10::ScalarType, c10::Scalar>>& accs,
                                             const MultiCombineFn& combine) {
  const int64_t rank = in.rank();
  const ReductionLoops loops = LoopsOf(in, dims);
  for (int64_t d : loops.reduced) {
    // linalg derives loop bounds from indexing-map results that are plain dims; a reduced dim
    // only broadcast (stride 0) or combined (d0 * 16 + d1, a reshaped view) has none: reduce a
    // copy with the identity map instead.
    bool plain = false;
    for (const AffineTerm& t : in.map) {
      plain = plain || (t.constant == 0 && t.coeffs.size() == 1 && t.coeffs[0].first == d && t.coeffs[0].second == 1);
    }
    if (!plain) {
      return ReduceMulti(View::Whole(Materialize(in), in.sizes, in.dtype), dims, keepdim, accs, combine);
    }
  }
  if (ir_ == nullptr) {
    std::vector<View> results;
    for (const auto& acc : accs) {
      results.push_back(ReducedView(IrValue(), in, dims, loops, keepdim, acc.first));
    }
    return results;
  }
  std::vector<AffineTerm> out_map;
  for (size_t j = 0; j < loops.kept.size(); ++j) {
    out_map.push_back(AffineTerm{0, {{static_cast<int>(loops.kept[j]), 1}}});
  }
  std::vector<IrValue> inits;
  for (const auto& [acc, init] : accs) {
    inits.push_back(ir_->Constant(init, acc));
  }
  std::vector<GenericOperand> outs;
  for (size_t i = 0; i < accs.size(); ++i) {
    outs.push_back(GenericOperand{ir_->Filled(loops.out_shape, accs[i].first, inits[i]), accs[i].first, out_map});
  }
  const GenericOperand input{in.base, in.dtype, IndexExprs(in, in.sizes)};
  const std::vector<IrValue> out =
      ir_->Generic(rank, loops.reduced, {input}, outs, [&](ScalarBuilder& b, const std::vector<IrValue>& args) {
        const Scalar x = b.Load(args[0], in.dtype);
        std::vector<Scalar> acc_args;
        for (size_t i = 0; i < accs.size(); ++i) {
          acc_args.push_back(b.Load(args[i + 1], accs[i].first));
        }
        std::vector<Scalar> next = combine(b, acc_args, x);
        std::vector<IrValue> yields;
        for (size_t i = 0; i < accs.size(); ++i) {
          yields.push_back(b.Store(b.Cast(next[i], accs[i].first)));
        }
        return yields;
      });
  std::vector<View> results;
  for (size_t i = 0; i < accs.size(); ++i) {
    results.push_back(ReducedView(out[i], in, dims, loops, keepdim, accs[i].first));
  }
  return results;
}

IrValue GroupLowering::Materialize(const View& v) {
  if (v.IsWhole()) {
    return v.base;
  }
  return Pointwise({Operand::Of(v)}, v.sizes, v.dtype,
                   [](ScalarBuilder&, const std::vector<Scalar>& a) { return a[0]; })
      .base;
}

absl::Status GroupLowering::Check(const View& bad, std::string message, base::ErrorKind kind) {
  if (bad.dtype != c10::kBool) {
    return absl::InternalError("Check takes a bool view");
  }
  if (++writes_ > kMaxWrites) {  // a check's counter is one more result
    return CutHere("the group writes as many views as an entry point can return");
  }
  std::vector<int64_t> all(bad.rank());
  std::iota(all.begin(), all.end(), 0);
  View count = Reduce(bad, all, /*keepdim=*/false, c10::kLong, 0,
                      [](ScalarBuilder& b, const Scalar& acc, const Scalar& x) { return b.Add(acc, b.Cast(x, c10::kLong)); });
  checks_.emplace_back(Materialize(count), GroupCheck{current_index(), std::move(message), kind});
  return absl::OkStatus();
}

absl::Status GroupLowering::Extern(const std::function<View(int64_t arg, const View&)>& pass) {
  const runtime::OpRecord& r = current();
  const c10::FunctionSchema& schema = r.op.schema();
  // In place only the scatter-adds and index puts into self (the runtime starts the result from
  // self's value: compiled_run.cpp; the trn pipeline copies it: trn/LowerGather.cpp, LowerAdvancedIndex.cpp).
  const bool into_self = schema.name() == "aten::index_add_" || schema.name() == "aten::scatter_add_" ||
                         schema.name() == "aten::_index_put_impl_" || schema.name() == "aten::index_put_";
  for (size_t j = 0; j < r.args.size(); ++j) {
    if (runtime::WritesArg(schema, j) && !schema.arguments()[j].is_out() && !(into_self && j == 0)) {
      return absl::UnimplementedError("runtime calls cannot mutate arguments in place");
    }
  }
  // Inputs: every device tensor argument that is not out=, in argument order, and the tensors of
  // an optional-tensor list (advanced indexing's indices) in list order, None entries skipped
  // (the runtime walks the record the same way: compiled_run.cpp).
  std::vector<View> reads;
  for (size_t j = 0; j < r.args.size(); ++j) {
    if (schema.arguments()[j].is_out()) continue;
    const c10::IValue& a = r.args[j];
    std::vector<at::Tensor> tensors;
    const bool index_list = a.isOptionalTensorList();
    if (IsDevice(a)) {
      tensors.push_back(a.toTensor());
    } else if (index_list) {
      for (const std::optional<at::Tensor> t : a.toOptionalTensorList()) {
        if (!t.has_value() || !t->defined()) continue;
        if (!runtime::IsDeviceTensor(*t)) return absl::UnimplementedError("an index tensor on the host");
        tensors.push_back(*t);
      }
    } else if (a.isTensorList() || a.isList()) {
      bool device = false;
      runtime::ForEachTensor(a, [&](const at::Tensor& t) { device = device || runtime::IsDeviceTensor(t); });
      if (device) return absl::UnimplementedError("runtime calls take no tensor lists (but optional-tensor index lists)");
    }
    for (const at::Tensor& t : tensors) {
      absl::StatusOr<View> v = Read(t);
      if (!v.ok()) return v.status();
      reads.push_back(pass ? pass(static_cast<int64_t>(j), *v) : std::move(*v));
    }
  }
  std::vector<at::Tensor> dests;
  for (size_t i = 0; i < schema.returns().size(); ++i) {
    at::Tensor d = Destination(i);
    if (!d.defined()) continue;
    if (!runtime::IsDeviceTensor(d)) return absl::UnimplementedError("a return that is not a device tensor");
    dests.push_back(d);
  }
  if (dests.empty()) return absl::UnimplementedError("a runtime call with no result");
  const int64_t k = externs_++;
  const std::vector<IrValue> results =
      ir_ != nullptr ? EmitExtern(reads, dests, k) : std::vector<IrValue>(dests.size());
  for (size_t i = 0; i < dests.size(); ++i) {
    absl::Status s = Write(dests[i], View::Whole(results[i], dests[i].sizes().vec(), dests[i].scalar_type()));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::vector<IrValue> GroupLowering::EmitExtern(const std::vector<View>& reads, const std::vector<at::Tensor>& dests,
                                               int64_t k) {
  ExternAttrs attrs;
  // %ctx and the op's index (i64 scalars), the reads, then the results: every operand indexed
  // by no loop (the placeholder's body is a stand-in; trn-extern-calls makes it a call).
  std::vector<GenericOperand> ins = {GenericOperand{ir_->ctx(), c10::kLong, {}}, GenericOperand{}};
  auto zeros = [](size_t rank) { return std::vector<AffineTerm>(rank, AffineTerm{0, {}}); };
  // A transposed read (a linear layer's weight gradient, grad_out^T @ x) is passed as its base
  // with the order of its dimensions: the call sees a strided view (trn-extern-calls), and the
  // kernel (MKL) reads it transposed for free, where a copy would cost a strided loop.
  bool permuted = false;
  for (const View& v : reads) {
    std::vector<int64_t> perm;
    if (!v.IsWhole() && v.IsPermutation(&perm)) {
      ins.push_back(GenericOperand{v.base, v.dtype, zeros(v.base_shape.size())});
      permuted = true;
    } else {
      ins.push_back(GenericOperand{Materialize(v), v.dtype, zeros(v.sizes.size())});
      perm.clear();
    }
    attrs.perms.push_back(std::move(perm));
  }
  std::vector<GenericOperand> outs;
  for (const at::Tensor& d : dests) {
    outs.push_back(GenericOperand{ir_->Empty(d.sizes().vec(), d.scalar_type()), d.scalar_type(),
                                  zeros(static_cast<size_t>(d.dim()))});
    attrs.perms.emplace_back();
  }
  if (!permuted) attrs.perms.clear();
  ins[1] = GenericOperand{ir_->Constant(current_index(), c10::kLong), c10::kLong, {}};
  attrs.call = absl::StrCat(kExternPrefix, reads.size() + dests.size(), "_", k);
  std::vector<int64_t> rows;  // for scatter_add only (trn/LowerGather.cpp)
  if (current().op.schema().name().rfind("aten::scatter_add", 0) == 0) {
    for (size_t i = 0; i < reads.size(); ++i) {
      if (reads[i].rank() >= 2 && reads[i].VariesAlongFirstOnly()) rows.push_back(static_cast<int64_t>(i));
    }
  }
  attrs.rows = std::move(rows);
  // What the call computes, for the trn pipeline's own lowerings: int and bool arguments, and
  // int / bool list arguments (an absent optional list as an empty one), in schema order.
  const std::vector<c10::Argument>& formals = current().op.schema().arguments();
  for (size_t j = 0; j < current().args.size() && j < formals.size(); ++j) {
    const c10::IValue& a = current().args[j];
    c10::TypePtr type = formals[j].type();
    if (auto opt = type->cast<c10::OptionalType>()) type = opt->getElementType();
    if (a.isInt() || a.isBool()) {
      attrs.ints.push_back(a.isInt() ? a.toInt() : static_cast<int64_t>(a.toBool()));
    } else if (a.isOptionalTensorList()) {  // an index list: 1 per index tensor, 0 per None
      std::vector<int64_t> l;
      for (const std::optional<at::Tensor> t : a.toOptionalTensorList()) l.push_back(t.has_value() && t->defined());
      attrs.lists.push_back(std::move(l));
    } else if (type->kind() == c10::TypeKind::ListType && !a.isTensorList() && (a.isNone() || a.isList())) {
      std::vector<int64_t> l;
      if (!a.isNone()) {
        for (const c10::IValue& e : a.toListRef()) {
          if (e.isInt() || e.isBool()) {
            l.push_back(e.isInt() ? e.toInt() : static_cast<int64_t>(e.toBool()));
          } else if (e.isSymInt() && e.toSymInt().maybe_as_int()) {
            l.push_back(*e.toSymInt().maybe_as_int());
          }
        }
      }
      attrs.lists.push_back(std::move(l));
    }
  }
  attrs.op = current().op.schema().name();
  const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(dests.size());
  return ir_->Generic(0, {}, ins, outs,
                      [n](ScalarBuilder&, const std::vector<IrValue>& args) {
                        // A stand-in body: yields the results' own block arguments.
                        return std::vector<IrValue>(args.end() - n, args.end());
                      },
                      &attrs);
}

absl::StatusOr<LoweredGroup> GroupLowering::Finish(const LiveAfter* live_after, const std::vector<bool>* live) {
  LoweredGroup g;
  std::vector<GroupResult> results;
  absl::flat_hash_set<void*> returned;
  // A storage is live when something reads it after this group: a user's tensor, autograd, or a
  // later op (LiveAfter).
  std::vector<bool> live_buffers(buffers_.size());
  if (live != nullptr) {
    if (live->size() != buffers_.size()) {
      return absl::InternalError(absl::StrCat("the replayed group has ", buffers_.size(), " buffers, its plan ",
                                              live->size()));
    }
    live_buffers = *live;
  } else {
    for (size_t i = 0; i < buffers_.size(); ++i) {
      const Buffer& b = buffers_[i];
      live_buffers[i] = live_after != nullptr
                            ? (*live_after)(b.storage)
                            : static_cast<int64_t>(c10::raw::intrusive_ptr::use_count(b.storage)) >
                                  static_cast<int64_t>(b.impls.size());
    }
  }
  g.live_buffers = live_buffers;
  for (Buffer& b : buffers_) {
    const bool live = live_buffers[static_cast<size_t>(b.id)];
    for (Write_& w : b.writes) {
      if (!live) {
        ++g.temporaries;
        continue;
      }
      const bool staged = NeedsStaging(b, w);
      g.outputs.push_back(GroupOutput{w.tensor, staged});
      g.bytes_written += Numel(w.geo.sizes) * static_cast<int64_t>(c10::elementSize(w.geo.dtype));
      if (ir_ == nullptr) {
        continue;
      }
      IrValue value = Materialize(w.value);
      if (!returned.insert(value.opaque()).second || ir_->IsArgument(value)) {
        // The same value returned twice (or an input returned): give this result its own
        // tensor, so destination passing has one producer per out argument.
        value = Pointwise({Operand::Of(View::Whole(value, w.geo.sizes, w.geo.dtype))}, w.geo.sizes, w.geo.dtype,
                          [](ScalarBuilder&, const std::vector<Scalar>& a) { return a[0]; })
                    .base;
        returned.insert(value.opaque());
      }
      results.push_back(GroupResult{value, staged ? ContiguousStrides(w.geo.sizes) : w.geo.strides,
                                    staged ? -1 : TiedArgument(b, w)});
    }
  }
  for (const auto& [count, check] : checks_) {
    results.push_back(GroupResult{count, {}, -1});
    g.checks.push_back(check);
  }
  if (!params_.empty()) {
    g.params = at::empty({static_cast<int64_t>(params_.size())}, at::TensorOptions().dtype(at::kDouble));
    std::copy(params_.begin(), params_.end(), g.params.data_ptr<double>());
    g.param_args = param_args_;
  }
  g.inputs = input_tensors_;
  g.externs = externs_;
  g.value_args = ValueArgs(-1);
  if (ir_ == nullptr) {
    return g;
  }
  absl::StatusOr<IrModule> module = ir_->Finish(results);
  if (!module.ok()) return module.status();
  g.module = std::make_shared<IrModule>(std::move(*module));
  return g;
}

}  // namespace trn::mlir_lowering
