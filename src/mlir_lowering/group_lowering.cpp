#include "mlir_lowering/group_lowering.h"

#include <ATen/ops/empty.h>
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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
      return View::Whole(in.ssa, geo.sizes, geo.dtype);
    }
  }
  if (static_cast<int64_t>(input_tensors_.size()) >= kMaxInputs) {
    return CutHere("the group has as many inputs as an entry point takes");
  }
  std::string ssa = names_.Next("in");
  b.inputs.push_back(Input{geo, ssa, {current_index()}});
  input_tensors_.push_back(t);
  input_geos_.push_back(geo);
  input_ssa_.push_back(ssa);
  return View::Whole(ssa, geo.sizes, geo.dtype);
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
  const std::string ssa = names_.Next("param");
  if (emit_) {
    const std::string index = names_.Next("pi");
    absl::StrAppend(&params_body_, "    ", index, " = arith.constant ", k, " : index\n    ", ssa,
                    " = tensor.extract %params[", index, "] : tensor<?xf64>\n");
  }
  return Operand::Param(ssa);
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
  auto it = std::find(input_ssa_.begin(), input_ssa_.end(), b.inputs.front().ssa);
  if (it == input_ssa_.end()) {
    return -1;
  }
  // After %ctx and, when the group has runtime scalars, %params.
  return 1 + (params_.empty() ? 0 : 1) + (it - input_ssa_.begin());
}

std::string GroupLowering::Constant(const c10::Scalar& value, c10::ScalarType dtype) {
  std::string ssa = names_.Next("c");
  if (!emit_) {
    return ssa;
  }
  Emit(absl::StrCat("    ", ssa, " = arith.constant ", StoredLiteral(value, dtype), " : ", *ElementType(dtype), "\n"));
  return ssa;
}

View GroupLowering::Pointwise(const std::vector<Operand>& ins, const std::vector<int64_t>& shape,
                              c10::ScalarType out_dtype, const BodyFn& body) {
  if (!emit_) {
    return View::Whole(names_.Next("p"), shape, out_dtype);
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  const std::string out_type = TensorType(shape, out_dtype);
  const std::string empty = names_.Next("e");
  std::string region;
  ScalarBuilder b(&names_, &region);
  std::vector<std::string> in_ssa, in_types, maps, block_args;
  std::vector<Scalar> elems;
  for (const Operand& in : ins) {
    if (in.view.has_value()) {
      const View& v = *in.view;
      in_ssa.push_back(v.base);
      in_types.push_back(TensorType(v.base_shape, v.dtype));
      maps.push_back(MapOf(v, shape));
      std::string arg = names_.Next("x");
      block_args.push_back(absl::StrCat(arg, ": ", *ElementType(v.dtype)));
      elems.push_back(b.Load(arg, v.dtype));
    } else {
      elems.push_back(Scalar{"", in.dtype});  // filled below, inside the region
    }
  }
  const std::string out_arg = names_.Next("o");
  block_args.push_back(absl::StrCat(out_arg, ": ", *ElementType(out_dtype)));
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].view.has_value()) {
      continue;
    }
    elems[i] = ins[i].param.empty() ? b.Constant(ins[i].constant, ins[i].dtype) : Scalar{ins[i].param, c10::kDouble};
  }
  const std::string r = b.Store(b.Cast(body(b, elems), out_dtype));
  // The output map is the identity, size-1 dims included: every loop dim must appear in some
  // indexing map (MapOf drops size-1 dims, which broadcast).
  maps.push_back(IdentityMap(rank));
  const std::string result = names_.Next("p");
  std::string text = absl::StrCat("    ", empty, " = tensor.empty() : ", out_type, "\n");
  absl::StrAppend(&text, "    ", result, " = linalg.generic {indexing_maps = [", absl::StrJoin(maps, ", "),
                  "], iterator_types = ", IteratorTypes(rank, {}), "}");
  if (!in_ssa.empty()) {
    absl::StrAppend(&text, " ins(", absl::StrJoin(in_ssa, ", "), " : ", absl::StrJoin(in_types, ", "), ")");
  }
  absl::StrAppend(&text, " outs(", empty, " : ", out_type, ") {\n    ^bb0(", absl::StrJoin(block_args, ", "), "):\n",
                  region, "    linalg.yield ", r, " : ", *ElementType(out_dtype), "\n    } -> ", out_type, "\n");
  Emit(text);
  return View::Whole(result, shape, out_dtype);
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
  if (!emit_) {
    const std::string result = names_.Next("r");
    std::vector<View> results;
    for (size_t i = 0; i < accs.size(); ++i) {
      const std::string ssa = accs.size() == 1 ? result : absl::StrCat(result, "#", i);
      results.push_back(ReducedView(ssa, in, dims, loops, keepdim, accs[i].first));
    }
    return results;
  }
  const std::vector<int64_t>& out_shape = loops.out_shape;
  std::vector<std::string> out_exprs;
  for (int64_t k : loops.kept) {
    out_exprs.push_back(absl::StrCat("d", k));
  }
  const std::string out_map =
      absl::StrCat("affine_map<", LoopDims(rank), " -> (", absl::StrJoin(out_exprs, ", "), ")>");
  std::string text;
  std::vector<std::string> filled, out_types, elem_types, maps = {MapOf(in, in.sizes)};
  for (const auto& [acc, init] : accs) {
    const std::string init_ssa = Constant(init, acc);
    const std::string empty = names_.Next("e"), f = names_.Next("f");
    out_types.push_back(TensorType(out_shape, acc));
    elem_types.emplace_back(*ElementType(acc));
    absl::StrAppend(&text, "    ", empty, " = tensor.empty() : ", out_types.back(), "\n    ", f, " = linalg.fill ins(",
                    init_ssa, " : ", elem_types.back(), ") outs(", empty, " : ", out_types.back(), ") -> ",
                    out_types.back(), "\n");
    filled.push_back(f);
    maps.push_back(out_map);
  }
  std::string region;
  ScalarBuilder b(&names_, &region);
  const std::string x = names_.Next("x");
  std::vector<std::string> block_args = {absl::StrCat(x, ": ", *ElementType(in.dtype))};
  std::vector<Scalar> acc_args;
  const Scalar x_value = b.Load(x, in.dtype);
  for (size_t i = 0; i < accs.size(); ++i) {
    const std::string a = names_.Next("a");
    block_args.push_back(absl::StrCat(a, ": ", elem_types[i]));
    acc_args.push_back(b.Load(a, accs[i].first));
  }
  std::vector<Scalar> next = combine(b, acc_args, x_value);
  std::vector<std::string> yields;
  for (size_t i = 0; i < accs.size(); ++i) {
    yields.push_back(b.Store(b.Cast(next[i], accs[i].first)));
  }
  const std::string result = names_.Next("r");
  const std::string arity = accs.size() == 1 ? "" : absl::StrCat(":", accs.size());
  absl::StrAppend(&text, "    ", result, arity, " = linalg.generic {indexing_maps = [",
                  absl::StrJoin(maps, ", "), "], iterator_types = ", IteratorTypes(rank, loops.reduced), "} ins(", in.base,
                  " : ", TensorType(in.base_shape, in.dtype), ") outs(", absl::StrJoin(filled, ", "), " : ",
                  absl::StrJoin(out_types, ", "), ") {\n    ^bb0(", absl::StrJoin(block_args, ", "), "):\n", region,
                  "    linalg.yield ", absl::StrJoin(yields, ", "), " : ", absl::StrJoin(elem_types, ", "),
                  "\n    } -> (", absl::StrJoin(out_types, ", "), ")\n");
  Emit(text);
  std::vector<View> results;
  for (size_t i = 0; i < accs.size(); ++i) {
    const std::string ssa = accs.size() == 1 ? result : absl::StrCat(result, "#", i);
    results.push_back(ReducedView(ssa, in, dims, loops, keepdim, accs[i].first));
  }
  return results;
}

std::string GroupLowering::Materialize(const View& v) {
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
  const std::string result = names_.Next("ext");
  if (emit_) {
    EmitExtern(reads, dests, k, result);
  }
  for (size_t i = 0; i < dests.size(); ++i) {
    absl::Status s = Write(dests[i], View::Whole(absl::StrCat(result, "#", i), dests[i].sizes().vec(),
                                                 dests[i].scalar_type()));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

void GroupLowering::EmitExtern(const std::vector<View>& reads, const std::vector<at::Tensor>& dests, int64_t k,
                               const std::string& result) {
  std::vector<std::string> ssa, types, elem_types, maps;
  // A transposed read (a linear layer's weight gradient, grad_out^T @ x) is passed as its base
  // with the order of its dimensions: the call sees a strided view (trn-extern-calls), and the
  // kernel (MKL) reads it transposed for free, where a copy would cost a strided loop.
  std::vector<std::string> perms;
  bool permuted = false;
  for (const View& v : reads) {
    std::vector<int64_t> perm;
    if (!v.IsWhole() && v.IsPermutation(&perm)) {
      ssa.push_back(v.base);
      types.push_back(TensorType(v.base_shape, v.dtype));
      perms.push_back(absl::StrCat("array<i64: ", absl::StrJoin(perm, ", "), ">"));
      permuted = true;
    } else {
      ssa.push_back(Materialize(v));
      types.push_back(TensorType(v.sizes, v.dtype));
      perms.push_back("array<i64>");
    }
    elem_types.emplace_back(*ElementType(v.dtype));
    std::vector<std::string> zeros(v.sizes.size(), "0");
    maps.push_back(absl::StrCat("affine_map<() -> (", absl::StrJoin(zeros, ", "), ")>"));
  }
  std::vector<std::string> out_empty, out_types;
  for (const at::Tensor& d : dests) {
    std::string e = names_.Next("e");
    out_types.push_back(TensorType(d.sizes().vec(), d.scalar_type()));
    Emit(absl::StrCat("    ", e, " = tensor.empty() : ", out_types.back(), "\n"));
    out_empty.push_back(e);
    std::vector<std::string> zeros(d.dim(), "0");
    maps.push_back(absl::StrCat("affine_map<() -> (", absl::StrJoin(zeros, ", "), ")>"));
  }
  const std::string idx = Constant(static_cast<int64_t>(current_index()), c10::kLong);
  const std::string call = absl::StrCat(kExternPrefix, reads.size() + dests.size(), "_", k);
  std::vector<std::string> args = {"%ctx", idx};
  args.insert(args.end(), ssa.begin(), ssa.end());
  std::vector<std::string> arg_types = {"i64", "i64"};
  arg_types.insert(arg_types.end(), types.begin(), types.end());
  std::vector<std::string> all_maps = {"affine_map<() -> ()>", "affine_map<() -> ()>"};
  all_maps.insert(all_maps.end(), maps.begin(), maps.end());
  std::vector<std::string> block_args;
  block_args.push_back(absl::StrCat(names_.Next("x"), ": i64"));
  block_args.push_back(absl::StrCat(names_.Next("x"), ": i64"));
  for (const std::string& et : elem_types) {
    block_args.push_back(absl::StrCat(names_.Next("x"), ": ", et));
  }
  std::vector<std::string> yields, yield_types;
  for (const at::Tensor& d : dests) {
    std::string o = names_.Next("o");
    std::string et(*ElementType(d.scalar_type()));
    block_args.push_back(absl::StrCat(o, ": ", et));
    yields.push_back(o);
    yield_types.push_back(et);
  }
  for (size_t i = 0; i < dests.size(); ++i) perms.push_back("array<i64>");
  std::string attrs =
      permuted ? absl::StrCat(", ", kExternPermsAttr, " = [", absl::StrJoin(perms, ", "), "]") : "";
  std::vector<int64_t> rows;  // for scatter_add only (trn/LowerGather.cpp)
  if (current().op.schema().name().rfind("aten::scatter_add", 0) == 0) {
    for (size_t i = 0; i < reads.size(); ++i) {
      if (reads[i].rank() >= 2 && reads[i].VariesAlongFirstOnly()) rows.push_back(static_cast<int64_t>(i));
    }
  }
  if (!rows.empty()) absl::StrAppend(&attrs, ", ", kExternRowsAttr, " = array<i64: ", absl::StrJoin(rows, ", "), ">");
  // What the call computes, for the trn pipeline's own lowerings: int and bool arguments, and
  // int / bool list arguments (an absent optional list as an empty one), in schema order.
  std::vector<int64_t> ints;
  std::vector<std::string> lists;
  const std::vector<c10::Argument>& formals = current().op.schema().arguments();
  for (size_t j = 0; j < current().args.size() && j < formals.size(); ++j) {
    const c10::IValue& a = current().args[j];
    c10::TypePtr type = formals[j].type();
    if (auto opt = type->cast<c10::OptionalType>()) type = opt->getElementType();
    if (a.isInt() || a.isBool()) {
      ints.push_back(a.isInt() ? a.toInt() : static_cast<int64_t>(a.toBool()));
    } else if (a.isOptionalTensorList()) {  // an index list: 1 per index tensor, 0 per None
      std::vector<int64_t> l;
      for (const std::optional<at::Tensor> t : a.toOptionalTensorList()) l.push_back(t.has_value() && t->defined());
      lists.push_back(absl::StrCat("array<i64", l.empty() ? "" : ": ", absl::StrJoin(l, ", "), ">"));
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
      lists.push_back(absl::StrCat("array<i64", l.empty() ? "" : ": ", absl::StrJoin(l, ", "), ">"));
    }
  }
  absl::StrAppend(&attrs, ", ", kExternOpAttr, " = \"", current().op.schema().name(), "\", ", kExternIntsAttr,
                  " = array<i64", ints.empty() ? "" : ": ", absl::StrJoin(ints, ", "), ">, ", kExternListsAttr, " = [",
                  absl::StrJoin(lists, ", "), "]");
  Emit(absl::StrCat("    ", result, ":", dests.size(), " = linalg.generic {indexing_maps = [",
                    absl::StrJoin(all_maps, ", "), "], iterator_types = [], library_call = \"", call, "\"", attrs,
                    "} ins(",
                    absl::StrJoin(args, ", "), " : ", absl::StrJoin(arg_types, ", "), ") outs(",
                    absl::StrJoin(out_empty, ", "), " : ", absl::StrJoin(out_types, ", "), ") {\n    ^bb0(",
                    absl::StrJoin(block_args, ", "), "):\n    linalg.yield ", absl::StrJoin(yields, ", "), " : ",
                    absl::StrJoin(yield_types, ", "), "\n    } -> (", absl::StrJoin(out_types, ", "), ")\n"));
}

absl::StatusOr<LoweredGroup> GroupLowering::Finish(const LiveAfter* live_after, const std::vector<bool>* live) {
  LoweredGroup g;
  std::vector<std::string> results, result_types;
  absl::flat_hash_set<std::string> returned;
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
      if (!emit_) {
        continue;
      }
      std::string ssa = Materialize(w.value);
      if (!returned.insert(ssa).second || ssa.rfind("%in", 0) == 0) {
        // The same value returned twice (or an input returned): give this result its own
        // tensor, so destination passing has one producer per out argument.
        ssa = Pointwise({Operand::Of(View::Whole(ssa, w.geo.sizes, w.geo.dtype))}, w.geo.sizes, w.geo.dtype,
                        [](ScalarBuilder&, const std::vector<Scalar>& a) { return a[0]; })
                  .base;
        returned.insert(ssa);
      }
      results.push_back(ssa);
      result_types.push_back(absl::StrCat(TensorType(w.geo.sizes, w.geo.dtype), " ",
                                          StridesAttr(staged ? ContiguousStrides(w.geo.sizes) : w.geo.strides,
                                                      staged ? -1 : TiedArgument(b, w))));
    }
  }
  for (const auto& [ssa, check] : checks_) {
    results.push_back(ssa);
    result_types.push_back(absl::StrCat(TensorType({}, c10::kLong), " ", StridesAttr({})));
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
  if (!emit_) {
    return g;
  }
  std::vector<std::string> params = {"%ctx: i64"};
  if (!params_.empty()) {
    params.push_back("%params: tensor<?xf64>");
  }
  for (size_t i = 0; i < input_tensors_.size(); ++i) {
    // Input SSA names are the function's parameter names.
    const TensorGeometry& geo = input_geos_[i];
    params.push_back(absl::StrCat(input_ssa_[i], ": ", TensorType(geo.sizes, geo.dtype), " ", StridesAttr(geo.strides)));
  }
  std::vector<std::string> plain_types;
  for (const std::string& t : result_types) {
    plain_types.push_back(t.substr(0, t.find(' ')));
  }
  g.mlir = absl::StrCat("func.func @", g.func, "(", absl::StrJoin(params, ", "), ") -> (",
                        absl::StrJoin(result_types, ", "), ") {\n", params_body_, body_);
  if (results.empty()) {
    absl::StrAppend(&g.mlir, "    return\n}\n");
  } else {
    absl::StrAppend(&g.mlir, "    return ", absl::StrJoin(results, ", "), " : ", absl::StrJoin(plain_types, ", "),
                    "\n}\n");
  }
  return g;
}

}  // namespace trn::mlir_lowering
