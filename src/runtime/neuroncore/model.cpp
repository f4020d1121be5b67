#include "runtime/neuroncore/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace trn::runtime::neuroncore {
namespace {

float Bf16ToF32(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t F32ToBf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

bool IsInteger(DType t) { return t == DType::kI32 || t == DType::kI8 || t == DType::kU8 || t == DType::kI64; }

// Integers load exactly (int64 fits a double up to 2^53); floats widen exactly.
double Load(const uint8_t* p, DType t) {
  switch (t) {
    case DType::kF32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::kBF16: { uint16_t v; std::memcpy(&v, p, 2); return Bf16ToF32(v); }
    case DType::kF16: { _Float16 v; std::memcpy(&v, p, 2); return static_cast<float>(v); }
    case DType::kI32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::kI8: return static_cast<int8_t>(*p);
    case DType::kU8: return *p;
    case DType::kI64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
  }
  return 0;
}

// An integer destination rounds to nearest and wraps to its width (two's complement, as a
// narrowing DMA or an integer ALU result does); NaN stores 0.
int64_t ToInteger(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(std::nearbyint(v));
}

void Store(uint8_t* p, DType t, double v) {
  switch (t) {
    case DType::kF32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    case DType::kBF16: { uint16_t b = F32ToBf16(static_cast<float>(v)); std::memcpy(p, &b, 2); return; }
    case DType::kF16: { _Float16 h = static_cast<_Float16>(static_cast<float>(v)); std::memcpy(p, &h, 2); return; }
    case DType::kI32: { int32_t i = static_cast<int32_t>(static_cast<uint32_t>(ToInteger(v))); std::memcpy(p, &i, 4); return; }
    case DType::kI8: *p = static_cast<uint8_t>(ToInteger(v)); return;
    case DType::kU8: *p = static_cast<uint8_t>(ToInteger(v)); return;
    case DType::kI64: { int64_t i = ToInteger(v); std::memcpy(p, &i, 8); return; }
  }
}

// Resolves (partition, free index) of an access to a byte address.
class View {
 public:
  View(uint8_t* base, int64_t row_bytes, int64_t limit, const Buffer& b, const Access& a)
      : base_(base), row_bytes_(row_bytes), limit_(limit), buffer_(b), access_(a), esize_(DTypeBytes(b.dtype)) {}
  int64_t partitions() const { return access_.partitions; }
  int64_t free() const { return access_.FreeElements(); }
  DType dtype() const { return buffer_.dtype; }
  bool hbm() const { return buffer_.space == Space::kHbm; }
  // nullptr when out of bounds.
  uint8_t* At(int64_t p, int64_t f) const {
    int64_t e = access_.offset;
    for (int i = static_cast<int>(access_.sizes.size()) - 1; i >= 0; --i) {
      e += (f % access_.sizes[i]) * access_.strides[i];
      f /= access_.sizes[i];
    }
    if (hbm()) {
      e += p * access_.partition_stride;
      const int64_t byte = e * esize_;
      return byte < 0 || byte + esize_ > limit_ ? nullptr : base_ + byte;
    }
    const int64_t row = buffer_.partition_start + access_.partition_start + p;
    const int64_t byte = static_cast<int64_t>(buffer_.offset) + e * esize_;
    if (e < 0 || e * esize_ + esize_ > static_cast<int64_t>(buffer_.bytes_per_partition) ||
        access_.partition_start + p >= buffer_.partitions) {
      return nullptr;
    }
    return base_ + row * row_bytes_ + byte;
  }
  float Get(int64_t p, int64_t f) const { return static_cast<float>(Load(At(p, f), buffer_.dtype)); }
  void Set(int64_t p, int64_t f, float v) const { Store(At(p, f), buffer_.dtype, v); }
  // Exact for every integer type (up to 2^53); what integer instructions compute with.
  double GetD(int64_t p, int64_t f) const { return Load(At(p, f), buffer_.dtype); }
  void SetD(int64_t p, int64_t f, double v) const { Store(At(p, f), buffer_.dtype, v); }
  bool integer() const { return IsInteger(buffer_.dtype); }
  // Every element inside the buffer (checked once per instruction, so Get/Set need not). The
  // address is affine in the indices, so its extremes are at corners of the index box.
  bool InBounds() const {
    if (partitions() <= 0 || free() <= 0) return true;
    int64_t lo = access_.offset, hi = access_.offset;
    for (size_t i = 0; i < access_.sizes.size(); ++i) {
      const int64_t span = (access_.sizes[i] - 1) * access_.strides[i];
      (span < 0 ? lo : hi) += span;
    }
    if (hbm()) {
      const int64_t span = (partitions() - 1) * access_.partition_stride;
      (span < 0 ? lo : hi) += span;
      return lo >= 0 && (hi + 1) * esize_ <= limit_;
    }
    return lo >= 0 && (hi + 1) * esize_ <= static_cast<int64_t>(buffer_.bytes_per_partition) &&
           access_.partition_start + partitions() <= buffer_.partitions;
  }

 private:
  uint8_t* base_;
  int64_t row_bytes_;
  int64_t limit_;
  const Buffer& buffer_;
  const Access& access_;
  int esize_;
};

float Activation(ActFunc func, float x) {
  switch (func) {
    case ActFunc::kIdentity: return x;
    case ActFunc::kExp: return std::exp(x);
    case ActFunc::kLog: return std::log(x);
    case ActFunc::kTanh: return std::tanh(x);
    case ActFunc::kGelu: return 0.5f * x * (1.0f + std::erf(x * 0.70710678f));
    case ActFunc::kGeluTanh: return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
    case ActFunc::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
    case ActFunc::kRelu: return x > 0 ? x : 0.0f;
    case ActFunc::kSilu: return x / (1.0f + std::exp(-x));
    case ActFunc::kRsqrt: return 1.0f / std::sqrt(x);
    case ActFunc::kSqrt: return std::sqrt(x);
    case ActFunc::kSquare: return x * x;
    case ActFunc::kReciprocal: return 1.0f / x;
    case ActFunc::kErf: return std::erf(x);
    // ScalarE's sin does no range reduction: outside [-pi, pi] (with a margin of a few ulp for
    // an argument the lowering reduced) its result is not defined. NaN there, so that a lowering
    // that forgot to reduce fails its tests instead of getting the library's exact answer.
    case ActFunc::kSin: return std::fabs(x) <= 3.1416f ? std::sin(x) : std::nanf("");
    case ActFunc::kCount: break;
  }
  return std::nanf("");
}

// In fp32 for float destinations; in double (exact for integers) for integer destinations. The
// bitwise ops and shifts act on the operands' integer values (ToInteger: a float operand
// holding one is exact); a left shift is the 32-bit ALU's, wrapping to int32.
template <typename T>
T Alu(AluOp op, T a, T b) {
  const T nan = std::numeric_limits<T>::quiet_NaN();
  switch (op) {
    case AluOp::kAdd: return a + b;
    case AluOp::kSubtract: return a - b;
    case AluOp::kMultiply: return a * b;
    case AluOp::kDivide: return a / b;
    case AluOp::kMaximum: return std::isnan(a) || std::isnan(b) ? nan : std::max(a, b);
    case AluOp::kMinimum: return std::isnan(a) || std::isnan(b) ? nan : std::min(a, b);
    case AluOp::kPower: return std::pow(a, b);
    case AluOp::kIsEqual: return a == b;
    case AluOp::kNotEqual: return a != b;
    case AluOp::kIsGe: return a >= b;
    case AluOp::kIsGt: return a > b;
    case AluOp::kIsLe: return a <= b;
    case AluOp::kIsLt: return a < b;
    case AluOp::kLogicalAnd: return (a != 0) && (b != 0);
    case AluOp::kLogicalOr: return (a != 0) || (b != 0);
    case AluOp::kBitwiseAnd: return static_cast<T>(ToInteger(a) & ToInteger(b));
    case AluOp::kBitwiseOr: return static_cast<T>(ToInteger(a) | ToInteger(b));
    case AluOp::kBitwiseXor: return static_cast<T>(ToInteger(a) ^ ToInteger(b));
    case AluOp::kLogicalShiftLeft: {
      const int64_t n = ToInteger(b);
      return n < 0 || n > 31 ? T(0) : static_cast<T>(static_cast<int32_t>(static_cast<uint32_t>(ToInteger(a)) << n));
    }
    case AluOp::kArithShiftRight: {
      const int64_t n = ToInteger(b);
      return static_cast<T>(ToInteger(a) >> (n < 0 || n > 31 ? 63 : n));
    }
    case AluOp::kCount: break;
  }
  return nan;
}

// SBUF (0) or PSUM (1) memory of this thread's core, at least `bytes`, kept across runs: a run
// that reads what it never wrote sees stale data, as on hardware.
std::vector<uint8_t>& OnChip(int which, size_t bytes) {
  thread_local std::vector<uint8_t> memory[2];
  if (memory[which].size() < bytes) memory[which].resize(bytes);
  return memory[which];
}

class Core {
 public:
  Core(const InstructionStream& s, const TargetSpec& t, const std::vector<HostBinding>& bindings)
      : s_(s), t_(t), bindings_(bindings),
        sbuf_(OnChip(0, static_cast<size_t>(t.partitions * t.sbuf_bytes_per_partition))),
        psum_(OnChip(1, static_cast<size_t>(t.partitions * t.psum_bytes_per_partition))), scratch_(s.buffers.size()) {
    for (size_t i = 0; i < s.buffers.size(); ++i) {
      // An HBM buffer bound to no argument is the group's scratch memory, fresh for each run.
      if (s.buffers[i].space == Space::kHbm && s.buffers[i].binding < 0) {
        scratch_[i].assign(static_cast<size_t>(s.buffers[i].bytes_per_partition), 0);
      }
    }
  }

  absl::Status CheckBuffers() const {
    for (size_t i = 0; i < s_.buffers.size(); ++i) {
      const Buffer& b = s_.buffers[i];
      if (b.space == Space::kHbm) {
        if (b.binding < 0) continue;  // scratch
        if ( static_cast<size_t>(b.binding) >= bindings_.size() ||
            bindings_[b.binding].data == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " is bound to argument ", b.binding,
                                                         ", which was not given"));
        }
        continue;
      }
      const int64_t cap = b.space == Space::kSbuf ? t_.sbuf_bytes_per_partition : t_.psum_bytes_per_partition;
      if (b.partition_start + b.partitions > static_cast<uint32_t>(t_.partitions) ||
          b.offset + b.bytes_per_partition > static_cast<uint64_t>(cap)) {
        return absl::InvalidArgumentError(absl::StrCat("buffer ", i, " does not fit ",
                                                       b.space == Space::kSbuf ? "SBUF" : "PSUM", " of ", t_.name));
      }
    }
    return absl::OkStatus();
  }

  View ViewOf(const Access& a) {
    const Buffer& b = s_.buffers[a.buffer];
    switch (b.space) {
      case Space::kHbm:
        if (b.binding < 0) {
          std::vector<uint8_t>& m = scratch_[a.buffer];
          return View(m.data(), 0, static_cast<int64_t>(m.size()), b, a);
        }
        return View(static_cast<uint8_t*>(bindings_[b.binding].data), 0, bindings_[b.binding].bytes, b, a);
      case Space::kSbuf:
        return View(sbuf_.data(), t_.sbuf_bytes_per_partition, 0, b, a);
      case Space::kPsum:
        return View(psum_.data(), t_.psum_bytes_per_partition, 0, b, a);
    }
    return View(nullptr, 0, 0, b, a);
  }

  // Executes `in` (functionally); returns its modeled duration in ns.
  absl::StatusOr<double> Execute(Engine engine, const Instruction& in, RunReport* report) {
    auto need = [&](size_t n) -> absl::Status {
      if (in.operands.size() != n) {
        return absl::InvalidArgumentError(absl::StrCat(OpcodeName(in.opcode), " takes ", n, " operands, got ",
                                                       in.operands.size()));
      }
      return absl::OkStatus();
    };
    std::vector<View> v;
    for (const Access& a : in.operands) {
      v.push_back(ViewOf(a));
      if (!v.back().InBounds()) {
        return absl::InvalidArgumentError(absl::StrCat("operand ", v.size() - 1, " of ", OpcodeName(in.opcode),
                                                       " reaches outside buffer ", a.buffer));
      }
    }
    const double ghz = engine == Engine::kTensor   ? t_.tensor_ghz
                       : engine == Engine::kVector ? t_.vector_ghz
                       : engine == Engine::kScalar ? t_.scalar_ghz
                                                   : t_.gpsimd_ghz;
    auto cycles = [&](double c) { return c / ghz; };
    // A DMA moving `bytes` over `partitions` (one queue each, up to the engines there are).
    auto dma_ns = [&](int64_t bytes, int64_t partitions) {
      report->dma_bytes += bytes;
      const int engines = static_cast<int>(std::min<int64_t>(t_.dma_engines, partitions));
      return t_.dma_fixed_ns + static_cast<double>(bytes) / (t_.dma_bytes_per_ns_per_engine * engines);
    };
    // Row indices[p] of an indirect DMA's table (whose "partitions" are its rows), checked.
    auto table_row = [](const char* op, const View& idx, int64_t p, const View& table) -> absl::StatusOr<int64_t> {
      const double row = idx.GetD(p, 0);
      if (!(row >= 0 && row < static_cast<double>(table.partitions()))) {
        return absl::OutOfRangeError(absl::StrCat(op, ": index ", static_cast<int64_t>(row),
                                                  " is out of range for a table of ", table.partitions(), " rows"));
      }
      return static_cast<int64_t>(row);
    };
    const double min_ii = t_.min_ii_cycles;
    switch (in.opcode) {
      case Opcode::kDmaCopy: {
        if (auto st = need(2); !st.ok()) return st;
        const View &src = v[0], &dst = v[1];
        if (src.partitions() * src.free() != dst.partitions() * dst.free()) {
          return absl::InvalidArgumentError("dma_copy: source and destination sizes differ");
        }
        const int64_t sf = src.free(), df = dst.free();
        if (functional) for (int64_t i = 0; i < src.partitions() * sf; ++i) {
          dst.SetD(i / df, i % df, src.GetD(i / sf, i % sf));  // casts (integers exactly), as [ISA] dma_copy
        }
        // Charged for the HBM side's bytes (a bf16 buffer widened into an f32 tile moves 2 bytes
        // an element; SBUF to SBUF: the destination's).
        const DType moved = src.hbm() ? src.dtype() : dst.dtype();
        return dma_ns(dst.partitions() * df * DTypeBytes(moved), std::max(src.partitions(), dst.partitions()));
      }
      case Opcode::kDmaGather: {
        // dst partition p <- row indices[p] of the table (the source's "partitions" are its rows).
        if (auto st = need(3); !st.ok()) return st;
        const View &table = v[0], &idx = v[1], &dst = v[2];
        if (!table.hbm() || idx.partitions() != dst.partitions() || idx.free() != 1 || table.free() != dst.free()) {
          return absl::InvalidArgumentError("dma_gather: expects an HBM table, [P, 1] indices and [P, row] destination");
        }
        for (int64_t p = 0; p < dst.partitions(); ++p) {
          absl::StatusOr<int64_t> row = table_row("dma_gather", idx, p, table);
          if (!row.ok()) return row.status();
          if (functional) {
            for (int64_t f = 0; f < dst.free(); ++f) dst.SetD(p, f, table.GetD(*row, f));
          }
        }
        return dma_ns(dst.partitions() * dst.free() * DTypeBytes(dst.dtype()), dst.partitions());
      }
      case Opcode::kDmaScatterAdd: {
        // table row indices[p] += partition p of src, for p in order (repeated indices
        // accumulate in that order), in fp32; the table's "partitions" are its rows.
        if (auto st = need(3); !st.ok()) return st;
        const View &src = v[0], &idx = v[1], &table = v[2];
        if (!table.hbm() || idx.partitions() != src.partitions() || idx.free() != 1 || table.free() != src.free() ||
            table.integer()) {
          return absl::InvalidArgumentError(
              "dma_scatter_add: expects a [P, row] source, [P, 1] indices and a float HBM table");
        }
        for (int64_t p = 0; p < src.partitions(); ++p) {
          absl::StatusOr<int64_t> row = table_row("dma_scatter_add", idx, p, table);
          if (!row.ok()) return row.status();
          if (functional) {
            for (int64_t f = 0; f < src.free(); ++f) table.Set(*row, f, table.Get(*row, f) + src.Get(p, f));
          }
        }
        // Read-modify-write: the rows cross the DMA twice (read and write back) besides the source.
        return dma_ns(3 * src.partitions() * src.free() * DTypeBytes(src.dtype()), src.partitions());
      }
      case Opcode::kMatmul: {
        if (auto st = need(3); !st.ok()) return st;
        const View &s = v[0], &m = v[1], &d = v[2];
        const int64_t k = s.partitions(), cols = s.free(), n = m.free();
        if (m.partitions() != k || d.partitions() != cols || d.free() != n) {
          return absl::InvalidArgumentError("matmul: shapes do not agree ([K,M] x [K,N] -> [M,N])");
        }
        const bool acc = in.flags & Instruction::kAccumulate;
        if (functional) {
          // Operands read once into fp32 arrays (bf16 widens exactly); dst[i][j] accumulates over
          // the partitions in order, in fp32, as PSUM does.
          std::vector<float> st(static_cast<size_t>(k * cols)), mv(static_cast<size_t>(k * n)),
              out(static_cast<size_t>(cols * n), 0.0f);
          for (int64_t p = 0; p < k; ++p) {
            for (int64_t i = 0; i < cols; ++i) st[p * cols + i] = s.Get(p, i);
            for (int64_t j = 0; j < n; ++j) mv[p * n + j] = m.Get(p, j);
          }
          if (acc) {
            for (int64_t i = 0; i < cols; ++i) {
              for (int64_t j = 0; j < n; ++j) out[i * n + j] = d.Get(i, j);
            }
          }
          for (int64_t i = 0; i < cols; ++i) {
            float* row = &out[i * n];
            for (int64_t p = 0; p < k; ++p) {
              const float a = st[p * cols + i];
              const float* b = &mv[p * n];
              for (int64_t j = 0; j < n; ++j) row[j] += a * b[j];
            }
          }
          for (int64_t i = 0; i < cols; ++i) {
            for (int64_t j = 0; j < n; ++j) d.Set(i, j, out[i * n + j]);
          }
        }
        report->matmul_flops += 2 * k * cols * n;
        const bool fp32 = s.dtype() == DType::kF32 || m.dtype() == DType::kF32;
        return cycles((fp32 ? 4.0 : 1.0) * std::max<double>(std::min<int64_t>(64, cols), n));  // [COST] nc_matmul
      }
      case Opcode::kTranspose: {
        if (auto st = need(2); !st.ok()) return st;
        const View &s = v[0], &d = v[1];
        if (d.partitions() != s.free() || d.free() != s.partitions()) {
          return absl::InvalidArgumentError("transpose: result must be [F, P]");
        }
        if (functional) for (int64_t p = 0; p < s.partitions(); ++p) {
          for (int64_t f = 0; f < s.free(); ++f) d.Set(f, p, s.Get(p, f));
        }
        return cycles(std::max<double>(s.partitions(), std::min<int64_t>(64, s.free())));  // [COST] nc_transpose
      }
      case Opcode::kActivation:
      case Opcode::kTensorCopy:
      case Opcode::kTensorScalar: {
        const bool column = in.operands.size() == 3;
        if (!column) {
          if (auto st = need(2); !st.ok()) return st;
        }
        const View& s = v[0];
        const View& d = v.back();
        if (s.partitions() != d.partitions() || s.free() != d.free()) {
          return absl::InvalidArgumentError(absl::StrCat(OpcodeName(in.opcode), ": tiles differ in shape"));
        }
        if (functional && d.integer() && in.opcode != Opcode::kActivation) {
          for (int64_t p = 0; p < s.partitions(); ++p) {
            const double c = column ? v[1].GetD(p, 0) : in.imm;
            for (int64_t f = 0; f < s.free(); ++f) {
              const double x = s.GetD(p, f);
              d.SetD(p, f, in.opcode == Opcode::kTensorScalar ? Alu<double>(static_cast<AluOp>(in.func), x, c) : x);
            }
          }
        } else if (functional) for (int64_t p = 0; p < s.partitions(); ++p) {
          const float c = column ? v[1].Get(p, 0) : 0.0f;
          for (int64_t f = 0; f < s.free(); ++f) {
            const float x = s.Get(p, f);
            float y = x;
            if (in.opcode == Opcode::kActivation) {
              y = Activation(static_cast<ActFunc>(in.func), x * static_cast<float>(in.imm) + c);
            } else if (in.opcode == Opcode::kTensorScalar) {
              y = Alu<float>(static_cast<AluOp>(in.func), x, column ? c : static_cast<float>(in.imm));
            }
            d.Set(p, f, y);
          }
        }
        return cycles(std::max<double>(min_ii, static_cast<double>(s.free())));  // [COST]
      }
      case Opcode::kTensorTensor: {
        if (auto st = need(3); !st.ok()) return st;
        const View &a = v[0], &b = v[1], &d = v[2];
        if (a.partitions() != d.partitions() || b.partitions() != d.partitions() || a.free() != d.free() ||
            b.free() != d.free()) {
          return absl::InvalidArgumentError("tensor_tensor: tiles differ in shape");
        }
        const AluOp alu = static_cast<AluOp>(in.func);
        if (functional) for (int64_t p = 0; p < d.partitions(); ++p) {
          if (d.integer()) {
            for (int64_t f = 0; f < d.free(); ++f) d.SetD(p, f, Alu<double>(alu, a.GetD(p, f), b.GetD(p, f)));
          } else {
            for (int64_t f = 0; f < d.free(); ++f) d.Set(p, f, Alu<float>(alu, a.Get(p, f), b.Get(p, f)));
          }
        }
        const bool fast = s_.buffers[in.operands[0].buffer].space == Space::kPsum ||
                          s_.buffers[in.operands[1].buffer].space == Space::kPsum ||
                          (a.dtype() == DType::kBF16 && b.dtype() == DType::kBF16 && d.dtype() == DType::kBF16 &&
                           (alu == AluOp::kAdd || alu == AluOp::kSubtract || alu == AluOp::kMultiply));
        return cycles(std::max<double>(min_ii, (fast ? 1.0 : 2.0) * static_cast<double>(d.free())));  // [COST]
      }
      case Opcode::kTensorReduce: {
        if (auto st = need(2); !st.ok()) return st;
        const View &s = v[0], &d = v[1];
        if (d.partitions() != s.partitions() || d.free() != 1) {
          return absl::InvalidArgumentError("tensor_reduce: result must be [P, 1]");
        }
        const ReduceOp reduce = static_cast<ReduceOp>(in.func);
        const AluOp alu = reduce == ReduceOp::kAdd ? AluOp::kAdd : reduce == ReduceOp::kMaximum ? AluOp::kMaximum : AluOp::kMinimum;
        if (functional) for (int64_t p = 0; p < s.partitions(); ++p) {
          if (d.integer()) {
            double acc = s.GetD(p, 0);
            for (int64_t f = 1; f < s.free(); ++f) acc = Alu<double>(alu, acc, s.GetD(p, f));
            d.SetD(p, 0, acc);
            continue;
          }
          float acc = s.Get(p, 0);
          for (int64_t f = 1; f < s.free(); ++f) acc = Alu<float>(alu, acc, s.Get(p, f));
          d.Set(p, 0, acc);
        }
        const bool half = s.dtype() == DType::kBF16 && d.dtype() == DType::kBF16 &&
                          (reduce == ReduceOp::kAdd || reduce == ReduceOp::kMaximum);
        return cycles((half ? 0.5 : 1.0) * static_cast<double>(s.free()));  // [COST] tensor_reduce
      }
      case Opcode::kIota:
      case Opcode::kMemset: {
        if (auto st = need(1); !st.ok()) return st;
        const View& d = v[0];
        if (functional) for (int64_t p = 0; p < d.partitions(); ++p) {
          for (int64_t f = 0; f < d.free(); ++f) {
            const double x = in.opcode == Opcode::kMemset ? in.imm : in.imm + p * in.imm2 + f * in.imm3;
            d.SetD(p, f, d.integer() ? x : static_cast<double>(static_cast<float>(x)));
          }
        }
        return in.opcode == Opcode::kIota ? cycles(150.0 + static_cast<double>(d.free()))  // [COST] iota
                                          : cycles(std::max<double>(min_ii, static_cast<double>(d.free())));
      }
      case Opcode::kCopyPredicated: {
        if (auto st = need(3); !st.ok()) return st;
        const View &s = v[0], &pred = v[1], &d = v[2];
        if (s.partitions() != d.partitions() || pred.partitions() != d.partitions() || s.free() != d.free() ||
            pred.free() != d.free()) {
          return absl::InvalidArgumentError("copy_predicated: tiles differ in shape");
        }
        if (functional) {
          for (int64_t p = 0; p < d.partitions(); ++p) {
            for (int64_t f = 0; f < d.free(); ++f) {
              if (pred.Get(p, f) != 0.0f) d.SetD(p, f, s.GetD(p, f));
            }
          }
        }
        const bool one_psum = (s_.buffers[in.operands[0].buffer].space == Space::kPsum) !=
                              (s_.buffers[in.operands[1].buffer].space == Space::kPsum);
        return cycles(std::max<double>(min_ii, (one_psum ? 1.0 : 2.0) * static_cast<double>(d.free())));  // [TCP]
      }
      case Opcode::kSignal:
      case Opcode::kWait:
      case Opcode::kCount:
        break;
    }
    return 0.0;
  }

 private:
  const InstructionStream& s_;
  const TargetSpec& t_;
  const std::vector<HostBinding>& bindings_;
  std::vector<uint8_t>& sbuf_;  // this thread's SBUF / PSUM memory (not cleared between runs,
  std::vector<uint8_t>& psum_;  // as on hardware)
  std::vector<std::vector<uint8_t>> scratch_;  // per buffer index: scratch HBM

 public:
  bool functional = true;
};

std::string Where(int engine, size_t index, const Instruction& in) {
  return absl::StrCat(EngineName(static_cast<Engine>(engine)), " instruction ", index, " (",
                      OpcodeName(in.opcode), ", from op ", in.source_op, ")");
}

// An instruction's error, carrying the recorded op it came from (FailedSourceOp).
absl::Status AtInstruction(absl::StatusCode code, int engine, size_t index, const Instruction& in,
                           absl::string_view what) {
  absl::Status status(code, absl::StrCat(Where(engine, index, in), ": ", what));
  status.SetPayload(kSourceOpPayload, absl::Cord(absl::StrCat(in.source_op)));
  return status;
}

}  // namespace

std::optional<uint32_t> FailedSourceOp(const absl::Status& status) {
  const auto payload = status.GetPayload(kSourceOpPayload);  // absl::optional<absl::Cord>
  uint32_t op = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &op)) return std::nullopt;
  return op;
}

absl::StatusOr<RunReport> Run(const InstructionStream& stream, const TargetSpec& target,
                              const std::vector<HostBinding>& bindings) {
  return Run(stream, target, bindings, RunOptions{});
}

absl::StatusOr<RunReport> Run(const InstructionStream& stream, const TargetSpec& target,
                              const std::vector<HostBinding>& bindings, const RunOptions& options) {
  Core core(stream, target, bindings);
  core.functional = options.functional;
  if (absl::Status st = core.CheckBuffers(); !st.ok()) return st;
  RunReport report;
  std::array<size_t, kEngines> pc{};
  std::array<double, kEngines> now{};
  // Completion times of each semaphore's signals, sorted: a wait for `value` may start when the
  // value-th signal has happened.
  std::vector<std::vector<double>> signals(static_cast<size_t>(target.semaphores));
  while (true) {
    int best = -1;
    double best_start = 0;
    for (int e = 0; e < kEngines; ++e) {
      if (pc[e] >= stream.queues[e].size()) continue;
      const Instruction& in = stream.queues[e][pc[e]];
      double start = now[e];
      if (in.opcode == Opcode::kWait) {
        if (in.semaphore >= signals.size()) {
          return AtInstruction(absl::StatusCode::kInvalidArgument, e, pc[e], in,
                               absl::StrCat("no semaphore ", in.semaphore));
        }
        const std::vector<double>& sig = signals[in.semaphore];
        if (sig.size() < in.value) continue;  // not yet satisfiable
        if (in.value > 0) start = std::max(start, sig[in.value - 1]);
      }
      if (best < 0 || start < best_start) {
        best = e;
        best_start = start;
      }
    }
    if (best < 0) break;
    const Instruction& in = stream.queues[best][pc[best]];
    if (in.opcode == Opcode::kSignal) {
      if (in.semaphore >= signals.size()) {
        return AtInstruction(absl::StatusCode::kInvalidArgument, best, pc[best], in,
                             absl::StrCat("no semaphore ", in.semaphore));
      }
      std::vector<double>& sig = signals[in.semaphore];
      sig.insert(std::upper_bound(sig.begin(), sig.end(), best_start), best_start);
    }
    absl::StatusOr<double> ns = core.Execute(static_cast<Engine>(best), in, &report);
    if (!ns.ok()) {
      return AtInstruction(ns.status().code(), best, pc[best], in, ns.status().message());
    }
    now[best] = best_start + *ns;
    if (options.trace && in.opcode != Opcode::kSignal && in.opcode != Opcode::kWait) {
      report.trace.push_back({static_cast<Engine>(best), in.opcode, in.source_op, best_start, now[best]});
    }
    report.engines[best].busy_ns += *ns;
    ++report.engines[best].instructions;
    ++pc[best];
  }
  for (int e = 0; e < kEngines; ++e) {
    if (pc[e] < stream.queues[e].size()) {
      const Instruction& in = stream.queues[e][pc[e]];
      return absl::FailedPreconditionError(absl::StrCat(
          "deadlock: ", Where(e, pc[e], in), " waits for semaphore ", in.semaphore, " to reach ", in.value,
          " but only ", in.semaphore < signals.size() ? signals[in.semaphore].size() : 0, " signals can happen"));
    }
    report.modeled_ns = std::max(report.modeled_ns, now[e]);
  }
  return report;
}

}  // namespace trn::runtime::neuroncore
