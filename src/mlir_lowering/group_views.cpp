// View algebra of the group lowering: buffers and views -> affine index maps (group_views.h).
#include "mlir_lowering/group_views.h"

#include <c10/util/strides.h>

#include <algorithm>
#include <functional>
#include <numeric>


namespace trn::mlir_lowering {

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& sizes) {
  const c10::DimVector strides = c10::contiguous_strides(sizes);
  return {strides.begin(), strides.end()};
}

int64_t Numel(const std::vector<int64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
}

namespace {

// The expression of one base dimension of `v` inside the loop nest `loops`, with v's dims
// aligned to the innermost loops (broadcasting): a size-1 view dim under a longer loop indexes 0.
// (Under a size-1 loop it keeps its loop dim, so every loop dim stays bound.)
AffineTerm Expr(const AffineTerm& t, const View& v, const std::vector<int64_t>& loops) {
  const int64_t shift = static_cast<int64_t>(loops.size()) - v.rank();
  AffineTerm e{t.constant, {}};
  for (const auto& [k, c] : t.coeffs) {
    if ((v.sizes[k] == 1 && loops[k + shift] != 1) || c == 0) {
      continue;
    }
    e.coeffs.emplace_back(static_cast<int>(k + shift), c);
  }
  return e;
}

}  // namespace

std::vector<AffineTerm> IndexExprs(const View& v, const std::vector<int64_t>& loops) {
  std::vector<AffineTerm> exprs;
  for (const AffineTerm& t : v.map) {
    exprs.push_back(Expr(t, v, loops));
  }
  return exprs;
}

std::vector<AffineTerm> IdentityExprs(int64_t rank) {
  std::vector<AffineTerm> exprs;
  for (int64_t i = 0; i < rank; ++i) {
    exprs.push_back(AffineTerm{0, {{static_cast<int>(i), 1}}});
  }
  return exprs;
}

ReductionLoops LoopsOf(const View& in, const std::vector<int64_t>& dims) {
  ReductionLoops l;
  for (int64_t i = 0; i < in.rank(); ++i) {
    const bool r = std::find(dims.begin(), dims.end(), i) != dims.end() && in.sizes[i] != 1;
    (r ? l.reduced : l.kept).push_back(i);
    if (!r) {
      l.out_shape.push_back(in.sizes[i]);
    }
  }
  return l;
}

// The view of a reduction's output tensor `value` as the reduction's result (keepdim or not).
View ReducedView(IrValue value, const View& in, const std::vector<int64_t>& dims, const ReductionLoops& l,
                 bool keepdim, c10::ScalarType dtype) {
  View v = View::Whole(value, l.out_shape, dtype);
  auto in_dims = [&](int64_t i) { return std::find(dims.begin(), dims.end(), i) != dims.end(); };
  v.sizes.clear();
  for (int64_t i = 0; i < in.rank(); ++i) {
    if (keepdim || !in_dims(i)) {
      v.sizes.push_back(in_dims(i) ? 1 : in.sizes[i]);
    }
  }
  v.map.clear();
  for (int64_t k : l.kept) {
    int pos = static_cast<int>(k);
    if (!keepdim) {
      pos = static_cast<int>(std::count_if(l.kept.begin(), l.kept.end(), [&](int64_t j) { return j < k && !in_dims(j); }));
    }
    v.map.push_back(keepdim || !in_dims(k) ? AffineTerm{0, {{pos, 1}}} : AffineTerm{0, {}});
  }
  return v;
}

// The view of `read` in terms of the value written to `written` (same storage), or nullopt when
// `read` is not an affine image of `written`'s index space. Exact: `written` must be a
// non-overlapping view, and each index the map produces must stay within its bounds.
std::optional<View> Derive(const TensorGeometry& written, const View& value, const TensorGeometry& read) {
  if (written.dtype != read.dtype) {
    return std::nullopt;
  }
  const int64_t wr = static_cast<int64_t>(written.sizes.size());
  std::vector<int64_t> order;
  for (int64_t j = 0; j < wr; ++j) {
    if (written.sizes[j] > 1) {
      if (written.strides[j] <= 0) {
        return std::nullopt;
      }
      order.push_back(j);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return written.strides[a] > written.strides[b]; });
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    if (written.strides[order[i]] < written.strides[order[i + 1]] * written.sizes[order[i + 1]]) {
      return std::nullopt;  // overlapping layout: indices are not unique
    }
  }
  auto decompose = [&](int64_t v, std::vector<int64_t>* coef) {
    coef->assign(wr, 0);
    if (v < 0) {
      return false;
    }
    for (int64_t j : order) {
      (*coef)[j] = v / written.strides[j];
      v -= (*coef)[j] * written.strides[j];
    }
    return v == 0;
  };
  std::vector<int64_t> c0;
  if (!decompose(read.offset - written.offset, &c0)) {
    return std::nullopt;
  }
  const int64_t rr = static_cast<int64_t>(read.sizes.size());
  std::vector<std::vector<int64_t>> b(rr);
  for (int64_t k = 0; k < rr; ++k) {
    if (read.sizes[k] > 1 && !decompose(read.strides[k], &b[k])) {
      return std::nullopt;
    }
    if (read.sizes[k] <= 1) {
      b[k].assign(wr, 0);
    }
  }
  for (int64_t j = 0; j < wr; ++j) {
    int64_t hi = c0[j];
    for (int64_t k = 0; k < rr; ++k) {
      hi += b[k][j] * (read.sizes[k] - 1);
    }
    if (hi > written.sizes[j] - 1) {
      return std::nullopt;
    }
  }
  View out;
  out.base = value.base;
  out.base_shape = value.base_shape;
  out.dtype = value.dtype;
  out.sizes = read.sizes;
  for (const AffineTerm& t : value.map) {
    AffineTerm n;
    n.constant = t.constant;
    for (const auto& [wdim, a] : t.coeffs) {
      n.constant += a * c0[wdim];
    }
    for (int64_t k = 0; k < rr; ++k) {
      int64_t c = 0;
      for (const auto& [wdim, a] : t.coeffs) {
        c += a * b[k][wdim];
      }
      if (c != 0) {
        n.coeffs.emplace_back(static_cast<int>(k), c);
      }
    }
    out.map.push_back(std::move(n));
  }
  return out;
}

// Whether linalg's verifier accepts `v` as an operand. It infers each loop's range from the
// first operand that indexes with the bare loop dim (`dK`: coefficient 1, no constant), and
// requires every such operand dim to have exactly that size. A view that reads a prefix of a
// written dim (x.view(2, 4, 64)[..., :16], the first of a q/k/v split) indexes the 64-long base
// dim with a bare `d2` over a 16-long loop, and would be rejected.
bool LinalgCanIndex(const View& v) {
  for (size_t j = 0; j < v.map.size(); ++j) {
    const AffineTerm& t = v.map[j];
    if (t.constant == 0 && t.coeffs.size() == 1 && t.coeffs[0].second == 1 &&
        v.sizes[t.coeffs[0].first] != v.base_shape[j]) {
      return false;
    }
  }
  return true;
}

TensorGeometry TensorGeometry::Of(const at::Tensor& t) {
  TensorGeometry g;
  g.sizes = t.sizes().vec();
  g.strides = t.strides().vec();
  g.offset = t.storage_offset();
  g.dtype = t.scalar_type();
  return g;
}

int64_t TensorGeometry::End() const {
  int64_t end = offset + 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) {
      return offset;
    }
    end += (sizes[i] - 1) * strides[i];
  }
  return end;
}

bool TensorGeometry::Overlaps(const TensorGeometry& o) const {
  const int64_t a = c10::elementSize(dtype), b = c10::elementSize(o.dtype);
  return Begin() * a < o.End() * b && o.Begin() * b < End() * a;
}

View View::Whole(IrValue value, std::vector<int64_t> shape, c10::ScalarType dtype) {
  View v;
  v.base = value;
  v.base_shape = shape;
  v.dtype = dtype;
  v.sizes = std::move(shape);
  for (size_t j = 0; j < v.sizes.size(); ++j) {
    v.map.push_back(AffineTerm{0, {{static_cast<int>(j), 1}}});
  }
  return v;
}

bool View::IsPermutation(std::vector<int64_t>* perm) const {
  if (map.size() != sizes.size()) {
    return false;
  }
  std::vector<int64_t> p(sizes.size(), -1);
  for (size_t j = 0; j < map.size(); ++j) {
    const AffineTerm& t = map[j];
    if (t.constant != 0 || t.coeffs.size() != 1 || t.coeffs[0].second != 1) {
      return false;
    }
    const int d = t.coeffs[0].first;
    if (d < 0 || d >= rank() || p[d] != -1 || sizes[d] != base_shape[j]) {
      return false;
    }
    p[d] = static_cast<int64_t>(j);
  }
  *perm = std::move(p);
  return true;
}

bool View::VariesAlongFirstOnly() const {
  for (const AffineTerm& t : map) {
    for (const auto& [d, coeff] : t.coeffs) {
      if (d != 0 && coeff != 0 && sizes[static_cast<size_t>(d)] != 1) return false;
    }
  }
  return true;
}

bool View::IsWhole() const {
  if (sizes != base_shape) {
    return false;
  }
  for (size_t j = 0; j < map.size(); ++j) {
    const AffineTerm& t = map[j];
    if (sizes[j] == 1) {
      continue;  // index 0 whatever the term says, as long as it is in bounds (it is)
    }
    if (t.constant != 0 || t.coeffs.size() != 1 || t.coeffs[0].first != static_cast<int>(j) ||
        t.coeffs[0].second != 1) {
      return false;
    }
  }
  return true;
}

}  // namespace trn::mlir_lowering
