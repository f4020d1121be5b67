#include "runtime/neuroncore/instruction_stream.h"

#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"

namespace trn::runtime::neuroncore {
namespace {

constexpr char kMagic[] = "TRNISTRM";  // 8 bytes, no terminator written

// The func table of `op`, or null when it takes none.
template <size_t N>
const std::string_view* Table(const std::array<std::string_view, N>& t, size_t* n) {
  *n = N;
  return t.data();
}
const std::string_view* FuncTable(Opcode op, size_t* n) {
  switch (op) {
    case Opcode::kActivation: return Table(kActFuncNames, n);
    case Opcode::kTensorTensor: case Opcode::kTensorScalar: return Table(kAluOpNames, n);
    case Opcode::kTensorReduce: return Table(kReduceOpNames, n);
    default: *n = 0; return nullptr;
  }
}

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
    out_.append(b, sizeof(T));
  }
  void Str(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void Raw(const char* p, size_t n) { out_.append(p, n); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  template <typename T>
  bool Get(T* v) {
    if (at_ + sizeof(T) > b_.size()) return false;
    std::memcpy(v, b_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool Str(std::string* s, size_t max) {
    uint32_t n = 0;
    if (!Get(&n) || n > max || at_ + n > b_.size()) return false;
    s->assign(b_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool Done() const { return at_ == b_.size(); }
  size_t remaining() const { return b_.size() - at_; }
  size_t at() const { return at_; }

 private:
  const std::string& b_;
  size_t at_ = 0;
};

absl::Status Bad(const std::string& what, size_t at) {
  return absl::InvalidArgumentError(absl::StrCat("instruction stream: ", what, " (at byte ", at, ")"));
}

// Encoded sizes of the fixed parts: a declared count is believed only if that many records fit in
// the bytes left (a 30-byte stream declaring 2^24 instructions allocated ~1.2 GB).
constexpr size_t kBufferRecordBytes = 1 + 1 + 4 + 4 + 8 + 8 + 4;
constexpr size_t kInstructionRecordBytes = 2 + 4 + 4 + 4 + 8 + 8 + 8 + 4 + 4 + 1;
constexpr size_t kOperandRecordBytes = 4 + 4 + 4 + 8 + 8 + 1;

// Limits a well-formed stream stays far inside; with them every address computation of the
// model (model.cpp: offset + sum of (size - 1) * stride over <= 5 dimensions) fits in int64 and a
// stream's work is bounded.
constexpr int64_t kMaxDim = int64_t{1} << 31;        // sizes, partitions of an access
constexpr int64_t kMaxStride = int64_t{1} << 28;     // |stride|, |partition stride| in elements
constexpr int64_t kMaxOffset = int64_t{1} << 40;     // |offset| in elements
constexpr uint64_t kMaxOnChipBytes = uint64_t{1} << 24;  // SBUF/PSUM bytes per partition, offset
constexpr uint64_t kMaxHbmBytes = uint64_t{1} << 30;     // an HBM scratch buffer
constexpr uint32_t kMaxPartitions = 128;
constexpr int64_t kMaxElements = int64_t{1} << 34;   // summed over every operand of the stream

absl::Status Validate(const InstructionStream& s) {
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const Buffer& b = s.buffers[i];
    const std::string which = absl::StrCat("buffer ", i);
    if (b.space == Space::kHbm) {
      if (b.binding < -1) return absl::InvalidArgumentError(absl::StrCat(which, ": binding ", b.binding));
      if (b.binding == -1 && b.bytes_per_partition > kMaxHbmBytes) {
        return absl::InvalidArgumentError(absl::StrCat(which, ": an HBM scratch of ", b.bytes_per_partition, " bytes"));
      }
      continue;
    }
    if (b.partitions == 0 || b.partitions > kMaxPartitions || b.partition_start >= kMaxPartitions ||
        b.partition_start + b.partitions > kMaxPartitions) {
      return absl::InvalidArgumentError(
          absl::StrCat(which, ": partitions ", b.partition_start, "+", b.partitions, " (at most ", kMaxPartitions, ")"));
    }
    if (b.bytes_per_partition > kMaxOnChipBytes || b.offset > kMaxOnChipBytes) {
      return absl::InvalidArgumentError(absl::StrCat(which, ": ", b.bytes_per_partition, " bytes at ", b.offset,
                                                     " per partition (at most ", kMaxOnChipBytes, ")"));
    }
  }
  int64_t elements = 0;
  for (int e = 0; e < kEngines; ++e) {
    for (size_t i = 0; i < s.queues[e].size(); ++i) {
      for (const Access& a : s.queues[e][i].operands) {
        const std::string where = absl::StrCat(EngineName(static_cast<Engine>(e)), " instruction ", i);
        if (a.partitions < 1 || a.partitions > kMaxDim || a.partition_start > kMaxDim ||
            std::abs(a.partition_stride) > kMaxStride || std::abs(a.offset) > kMaxOffset) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": an operand's partitions, stride or offset is out of range"));
        }
        int64_t n = a.partitions;
        for (size_t d = 0; d < a.sizes.size(); ++d) {
          if (a.sizes[d] < 1 || a.sizes[d] > kMaxDim || std::abs(a.strides[d]) > kMaxStride) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": free dimension ", d, " has size ", a.sizes[d], ", stride ", a.strides[d]));
          }
          if (n > kMaxElements / a.sizes[d]) n = kMaxElements + 1;
          else n *= a.sizes[d];
        }
        elements += n;
        if (n > kMaxElements || elements > kMaxElements) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": more than ", kMaxElements,
                                                         " elements in the stream's accesses"));
        }
      }
    }
  }
  return absl::OkStatus();
}

std::string AccessText(const Access& a, const InstructionStream& s) {
  const char space = a.buffer < s.buffers.size()
                         ? "hsp"[static_cast<int>(s.buffers[a.buffer].space)]
                         : '?';
  std::string dims;
  for (size_t i = 0; i < a.sizes.size(); ++i) {
    absl::StrAppend(&dims, i ? ", " : "", a.sizes[i], ":", a.strides[i]);
  }
  return absl::StrFormat("%c%u[p%u+%u%s, +%d, (%s)]", space, a.buffer, a.partition_start, a.partitions,
                         a.partition_stride != 0 ? absl::StrCat(":", a.partition_stride) : "", a.offset, dims);
}

}  // namespace

std::string_view FuncName(const Instruction& in) {
  size_t n = 0;
  const std::string_view* table = FuncTable(in.opcode, &n);
  return table != nullptr && in.func < n ? table[in.func] : std::string_view();
}

const char* EngineName(Engine e) {
  return kEngineNames[static_cast<int>(e)].data();  // (literals: NUL-terminated)
}

int DTypeBytes(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: return 4;
    case DType::kBF16: case DType::kF16: return 2;
    case DType::kI8: case DType::kU8: return 1;
    case DType::kI64: return 8;
  }
  return 0;
}

const char* DTypeName(DType t) {
  static const char* const kNames[] = {"f32", "bf16", "f16", "i32", "i8", "u8", "i64"};
  return kNames[static_cast<int>(t)];
}

const char* OpcodeName(Opcode op) {
  static const char* const kNames[] = {"dma_copy", "matmul", "transpose", "activation", "tensor_tensor",
                                       "tensor_scalar", "tensor_reduce", "tensor_copy", "iota", "memset",
                                       "signal", "wait", "copy_predicated", "dma_gather", "dma_scatter_add"};
  return static_cast<int>(op) < static_cast<int>(Opcode::kCount) ? kNames[static_cast<int>(op)] : "?";
}

int64_t Access::FreeElements() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::string Encode(const InstructionStream& s) {
  Writer w;
  w.Raw(kMagic, 8);
  w.Put<uint32_t>(kStreamFormatVersion);
  w.Str(s.target);
  w.Put<uint32_t>(static_cast<uint32_t>(s.buffers.size()));
  for (const Buffer& b : s.buffers) {
    w.Put<uint8_t>(static_cast<uint8_t>(b.space));
    w.Put<uint8_t>(static_cast<uint8_t>(b.dtype));
    w.Put(b.partitions);
    w.Put(b.partition_start);
    w.Put(b.bytes_per_partition);
    w.Put(b.offset);
    w.Put(b.binding);
  }
  for (const std::vector<Instruction>& queue : s.queues) {
    w.Put<uint32_t>(static_cast<uint32_t>(queue.size()));
    for (const Instruction& in : queue) {
      w.Put<uint16_t>(static_cast<uint16_t>(in.opcode));
      w.Put(in.source_op);
      w.Put(in.func);
      w.Put(in.flags);
      w.Put(in.imm);
      w.Put(in.imm2);
      w.Put(in.imm3);
      w.Put(in.semaphore);
      w.Put(in.value);
      w.Put<uint8_t>(static_cast<uint8_t>(in.operands.size()));
      for (const Access& a : in.operands) {
        w.Put(a.buffer);
        w.Put(a.partition_start);
        w.Put(a.partitions);
        w.Put(a.partition_stride);
        w.Put(a.offset);
        w.Put<uint8_t>(static_cast<uint8_t>(a.sizes.size()));
        for (size_t i = 0; i < a.sizes.size(); ++i) {
          w.Put(a.sizes[i]);
          w.Put(a.strides[i]);
        }
      }
    }
  }
  return w.Take();
}

absl::StatusOr<InstructionStream> Decode(const std::string& bytes) {
  Reader r(bytes);
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) return Bad("not an instruction stream", 0);
  uint64_t magic;
  r.Get(&magic);
  uint32_t version = 0;
  if (!r.Get(&version)) return Bad("truncated header", r.at());
  if (version != kStreamFormatVersion) {
    return Bad(absl::StrCat("format version ", version, ", this build reads ", kStreamFormatVersion), 8);
  }
  InstructionStream s;
  if (!r.Str(&s.target, 64)) return Bad("truncated target", r.at());
  uint32_t n = 0;
  if (!r.Get(&n) || n > (1u << 20) || n > r.remaining() / kBufferRecordBytes) return Bad("bad buffer count", r.at());
  s.buffers.resize(n);
  for (Buffer& b : s.buffers) {
    uint8_t space = 0, dtype = 0;
    if (!r.Get(&space) || !r.Get(&dtype) || !r.Get(&b.partitions) || !r.Get(&b.partition_start) ||
        !r.Get(&b.bytes_per_partition) || !r.Get(&b.offset) || !r.Get(&b.binding)) {
      return Bad("truncated buffer table", r.at());
    }
    if (space > 2) return Bad(absl::StrCat("unknown memory space ", space), r.at());
    if (dtype > 6) return Bad(absl::StrCat("unknown dtype ", dtype), r.at());
    if (dtype == 6 && space != 0) return Bad("an i64 tile (engines have no 64-bit integers)", r.at());
    b.space = static_cast<Space>(space);
    b.dtype = static_cast<DType>(dtype);
  }
  for (std::vector<Instruction>& queue : s.queues) {
    uint32_t count = 0;
    if (!r.Get(&count) || count > (1u << 24) || count > r.remaining() / kInstructionRecordBytes) {
      return Bad("bad instruction count", r.at());
    }
    queue.resize(count);
    for (Instruction& in : queue) {
      uint16_t op = 0;
      uint8_t nops = 0;
      if (!r.Get(&op) || !r.Get(&in.source_op) || !r.Get(&in.func) || !r.Get(&in.flags) || !r.Get(&in.imm) ||
          !r.Get(&in.imm2) || !r.Get(&in.imm3) || !r.Get(&in.semaphore) || !r.Get(&in.value) || !r.Get(&nops)) {
        return Bad("truncated instruction", r.at());
      }
      if (op >= static_cast<uint16_t>(Opcode::kCount)) return Bad(absl::StrCat("unknown opcode ", op), r.at());
      in.opcode = static_cast<Opcode>(op);
      size_t funcs = 0;
      if (FuncTable(in.opcode, &funcs) != nullptr && in.func >= funcs) {
        return Bad(absl::StrCat("unknown function ", in.func, " of ", OpcodeName(in.opcode)), r.at());
      }
      if (nops > r.remaining() / kOperandRecordBytes) return Bad("truncated operands", r.at());
      in.operands.resize(nops);
      for (Access& a : in.operands) {
        uint8_t dims = 0;
        if (!r.Get(&a.buffer) || !r.Get(&a.partition_start) || !r.Get(&a.partitions) || !r.Get(&a.partition_stride) ||
            !r.Get(&a.offset) || !r.Get(&dims)) {
          return Bad("truncated operand", r.at());
        }
        if (a.buffer >= s.buffers.size()) {
          return Bad(absl::StrCat("operand names buffer ", a.buffer, " of ", s.buffers.size()), r.at());
        }
        if (dims > 4) return Bad(absl::StrCat(dims, " free dimensions (at most 4)"), r.at());
        a.sizes.resize(dims);
        a.strides.resize(dims);
        for (int i = 0; i < dims; ++i) {
          if (!r.Get(&a.sizes[i]) || !r.Get(&a.strides[i])) return Bad("truncated operand", r.at());
        }
      }
    }
  }
  if (!r.Done()) return Bad("trailing bytes", r.at());
  if (absl::Status valid = Validate(s); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("instruction stream: ", valid.message()));
  }
  return s;
}

std::string Disassemble(const InstructionStream& s) {
  std::string out = absl::StrFormat("; trn instruction stream v%u, target %s\n", kStreamFormatVersion, s.target);
  for (size_t i = 0; i < s.buffers.size(); ++i) {
    const Buffer& b = s.buffers[i];
    if (b.space == Space::kHbm) {
      absl::StrAppendFormat(&out, "buffer h%u: hbm %s, %u bytes, argument %d\n", i, DTypeName(b.dtype),
                            b.bytes_per_partition, b.binding);
    } else {
      absl::StrAppendFormat(&out, "buffer %c%u: %s %s, partitions %u..%u, %u bytes/partition at %u\n",
                            b.space == Space::kSbuf ? 's' : 'p', i, b.space == Space::kSbuf ? "sbuf" : "psum",
                            DTypeName(b.dtype), b.partition_start, b.partition_start + b.partitions - 1,
                            b.bytes_per_partition, b.offset);
    }
  }
  for (int e = 0; e < kEngines; ++e) {
    absl::StrAppendFormat(&out, "queue %s (%u instructions)\n", EngineName(static_cast<Engine>(e)), s.queues[e].size());
    for (size_t i = 0; i < s.queues[e].size(); ++i) {
      const Instruction& in = s.queues[e][i];
      std::vector<std::string> ops;
      for (const Access& a : in.operands) ops.push_back(AccessText(a, s));
      std::string attrs;
      if (in.opcode == Opcode::kSignal) attrs = absl::StrCat(" sem ", in.semaphore);
      if (in.opcode == Opcode::kWait) attrs = absl::StrCat(" sem ", in.semaphore, " >= ", in.value);
      if (!FuncName(in).empty()) absl::StrAppend(&attrs, " ", std::string(FuncName(in)));
      if (in.flags & Instruction::kAccumulate) absl::StrAppend(&attrs, " accumulate");
      if (in.imm != 0 || in.imm2 != 0 || in.imm3 != 0) absl::StrAppend(&attrs, " imm ", in.imm, ",", in.imm2, ",", in.imm3);
      const std::string joined = absl::StrCat(absl::StrJoin(ops, ", "), attrs);
      const absl::string_view body = absl::StripLeadingAsciiWhitespace(joined);
      absl::StrAppendFormat(&out, "  %4u  %-13s %s  ; op %u\n", i, OpcodeName(in.opcode), body, in.source_op);
    }
  }
  return out;
}

}  // namespace trn::runtime::neuroncore
