#include "runtime/split_matmul.h"

#include <ATen/ops/addmm.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/mm.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "runtime/kernel_pool.h"

namespace trn::runtime {
namespace {

enum class Kind { kNone, kMm, kAddmm, kBmm, kBaddbmm };

Kind KindOf(const c10::OperatorHandle& op) {
  thread_local absl::flat_hash_map<const c10::FunctionSchema*, Kind> memo;
  const c10::FunctionSchema& schema = op.schema();
  auto [it, inserted] = memo.try_emplace(&schema, Kind::kNone);
  if (inserted && schema.overload_name() == "out") {
    const std::string& n = schema.name();
    it->second = n == "aten::mm" ? Kind::kMm : n == "aten::addmm" ? Kind::kAddmm : n == "aten::bmm" ? Kind::kBmm
               : n == "aten::baddbmm" ? Kind::kBaddbmm : Kind::kNone;
  }
  return it->second;
}

// Fewer multiply-adds than this: one chunk (a helper's wake-up would cost more than it saves).
constexpr int64_t kMinMacs = int64_t{1} << 20;
constexpr int64_t kMinRows = 16;
constexpr int64_t kMacsPerNs = 20;  // rows of one chunk of an mm/addmm

bool Plain(const c10::IValue& v) {
  return v.isTensor() && v.toTensor().defined() && v.toTensor().layout() == at::kStrided &&
         !v.toTensor().is_conj() && !v.toTensor().is_neg();
}

}  // namespace

bool RunSplitMatmul(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const Kind kind = KindOf(op);
  KernelPool* pool = KernelPool::OfThisThread();
  if (kind == Kind::kNone || pool == nullptr || pool->helpers() == 0) return false;
  torch::jit::Stack& s = *stack;
  const bool batched = kind == Kind::kBmm || kind == Kind::kBaddbmm;
  const bool add = kind == Kind::kAddmm || kind == Kind::kBaddbmm;
  const size_t a_i = add ? 1 : 0, b_i = add ? 2 : 1, out_i = add ? 5 : 2;
  if (s.size() != out_i + 1) return false;
  for (size_t i : {a_i, b_i, out_i}) {
    if (!Plain(s[i])) return false;
  }
  if (add && !Plain(s[0])) return false;
  const at::Tensor a = s[a_i].toTensor(), b = s[b_i].toTensor(), out = s[out_i].toTensor();
  const int64_t rank = batched ? 3 : 2;
  if (a.dim() != rank || b.dim() != rank || out.dim() != rank) return false;
  // The result must already have its final sizes (the recorder sized it): no resize in chunks.
  const int64_t m = a.size(rank - 2), k = a.size(rank - 1), n = b.size(rank - 1);
  if (b.size(rank - 2) != k || out.size(rank - 2) != m || out.size(rank - 1) != n) return false;
  const int64_t batches = batched ? a.size(0) : 1;
  if (batched && (b.size(0) != batches || out.size(0) != batches)) return false;
  if (batches * m * n * k < kMinMacs) return false;
  // Split along the batch (batched) or the rows (matrices); the bias of addmm/baddbmm is split
  // with the result where it has that dimension, else broadcast whole.
  const int64_t extent = batched ? batches : m;
  const int64_t max_chunks = batched ? extent : extent / kMinRows;
  const int64_t chunks = std::min<int64_t>(pool->helpers() + 1, max_chunks);
  if (chunks < 2) return false;
  const at::Tensor self = add ? s[0].toTensor() : at::Tensor();
  const bool self_split = add && self.dim() == rank && self.size(0) == extent;
  const c10::Scalar beta = add ? s[3].toScalar() : c10::Scalar(1);
  const c10::Scalar alpha = add ? s[4].toScalar() : c10::Scalar(1);
  // About how long one thread takes: single-threaded MKL does ~20 multiply-adds a nanosecond here.
  const int64_t expected_ns = batches * m * n * k / kMacsPerNs;
  pool->ParallelFor(static_cast<int>(chunks), [&](int c) {
    c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    const int64_t begin = extent * c / chunks, end = extent * (c + 1) / chunks;
    // Both split along dim 0: the batch of a batched product, the rows of a matrix one.
    at::Tensor o = out.narrow(0, begin, end - begin);
    at::Tensor ac = a.narrow(0, begin, end - begin);
    at::Tensor bc = batched ? b.narrow(0, begin, end - begin) : b;
    at::Tensor sc = !add ? at::Tensor() : self_split ? self.narrow(0, begin, end - begin) : self;
    switch (kind) {
      case Kind::kMm: at::mm_out(o, ac, bc); break;
      case Kind::kBmm: at::bmm_out(o, ac, bc); break;
      case Kind::kAddmm: at::addmm_out(o, sc, ac, bc, beta, alpha); break;
      case Kind::kBaddbmm: at::baddbmm_out(o, sc, ac, bc, beta, alpha); break;
      case Kind::kNone: break;
    }
  }, expected_ns);
  s.clear();
  s.push_back(out);
  return true;
}

}  // namespace trn::runtime
