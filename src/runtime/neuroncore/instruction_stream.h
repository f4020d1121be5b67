// The trn instruction stream: what the trn pipeline (src/mlir_lowering/trn) produces for one
// group and the NeuronCore model (this folder) runs. A versioned binary:
//
//   header      magic "TRNISTRM", u32 format version, target name ("trn2" | "trn3")
//   buffers     the group's memory: HBM tensors (bound to the group's inputs/outputs at run
//               time) and SBUF / PSUM tiles (placed: partition start, byte offset per partition)
//   queues      one instruction queue per engine (TensorE, VectorE, ScalarE, GpSimd, DMA); the
//               engines run concurrently, ordered only by semaphore signal / wait
//   instruction opcode, the index of the recorded op it came from (so a device error or a
//               profile names the model's source line), operands as access patterns, and the
//               opcode's attributes
//
// This is our own format, not the Neuron ISA or a NEFF (docs/trn_target.md §4): it carries
// what the model needs and what a real backend would have to produce.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace trn::runtime::neuroncore {

// 2: DType kI64, Opcode kDmaGather; 3: kDmaScatterAdd; 4: AluOp bitwise_and / _or / _xor and the
// shifts
inline constexpr uint32_t kStreamFormatVersion = 4;

enum class Engine : uint8_t { kTensor = 0, kVector = 1, kScalar = 2, kGpSimd = 3, kDma = 4 };
inline constexpr int kEngines = 5;
// The engines' names, in Engine order: the trn dialect's `engine` attributes and the disassembly.
inline constexpr std::array<std::string_view, kEngines> kEngineNames = {"tensor", "vector", "scalar", "gpsimd", "dma"};
const char* EngineName(Engine e);

enum class Space : uint8_t { kHbm = 0, kSbuf = 1, kPsum = 2 };
// kI64 is for HBM only (torch's int64 tensors): engines have no 64-bit integers, DMA narrows
// to i32 tiles and widens back.
enum class DType : uint8_t { kF32 = 0, kBF16 = 1, kF16 = 2, kI32 = 3, kI8 = 4, kU8 = 5, kI64 = 6 };
int DTypeBytes(DType t);
const char* DTypeName(DType t);

struct Buffer {
  Space space = Space::kSbuf;
  DType dtype = DType::kF32;
  // SBUF/PSUM: partitions used and the placement. HBM: `binding` is the group argument it is.
  uint32_t partitions = 0;
  uint32_t partition_start = 0;
  uint64_t bytes_per_partition = 0;  // SBUF/PSUM; HBM: total bytes
  uint64_t offset = 0;               // SBUF/PSUM: byte address within each partition
  int32_t binding = -1;              // HBM: group argument index
};

// Which elements an instruction reads or writes: up to 4 free dimensions, like the hardware's
// access patterns ([G2] "Accessing SBUF/PSUM tensors"). For tiles, partition p of the access is
// buffer partition (partition_start + p); for HBM, partition_stride (elements) steps it.
struct Access {
  uint32_t buffer = 0;
  uint32_t partition_start = 0;
  uint32_t partitions = 1;
  int64_t partition_stride = 0;  // HBM only
  int64_t offset = 0;            // elements
  std::vector<int64_t> sizes;    // free dims, outermost first (at most 4)
  std::vector<int64_t> strides;  // elements, same length
  int64_t FreeElements() const;
};

enum class Opcode : uint16_t {
  kDmaCopy = 0, kMatmul, kTranspose, kActivation, kTensorTensor, kTensorScalar, kTensorReduce,
  kTensorCopy, kIota, kMemset, kSignal, kWait, kCopyPredicated, kDmaGather, kDmaScatterAdd,
  kCount  // not an opcode
};
const char* OpcodeName(Opcode op);

// What an instruction applies (Instruction::func), by opcode: ScalarE activation's function,
// tensor_tensor's and tensor_scalar's ALU operation, tensor_reduce's operation. The value is the
// encoding; the name is the trn dialect's spelling (trn/TrnOps.td: its verifiers accept these
// names only) and the disassembler's. One table each, shared by the dialect, its emitter and the
// model, so an encoding cannot drift between them.
enum class ActFunc : uint32_t {
  kIdentity, kExp, kLog, kTanh, kGelu, kGeluTanh, kSigmoid, kRelu, kSilu, kRsqrt, kSqrt, kSquare, kReciprocal,
  kErf,  // [NLERF]
  kSin,  // valid input [-pi, pi]: no range reduction ([COMMON])
  kCount
};
inline constexpr std::array<std::string_view, static_cast<size_t>(ActFunc::kCount)> kActFuncNames = {
    "identity", "exp", "log", "tanh", "gelu", "gelu_tanh", "sigmoid", "relu", "silu", "rsqrt", "sqrt", "square",
    "reciprocal", "erf", "sin"};
enum class AluOp : uint32_t {
  kAdd, kSubtract, kMultiply, kDivide, kMaximum, kMinimum, kPower, kIsEqual, kNotEqual, kIsGe, kIsGt, kIsLe, kIsLt,
  kLogicalAnd, kLogicalOr,
  // On the two's-complement integer values ([COMMON] ALU ops; NKI's nl.bitwise_and / _or / _xor,
  // nl.left_shift, nl.right_shift): integer destinations only (the trn dialect's verifiers
  // refuse a float one). The shifts are the 32-bit ALU's: a count outside [0, 31] shifts
  // everything out (0 to the left, the sign to the right).
  kBitwiseAnd, kBitwiseOr, kBitwiseXor, kLogicalShiftLeft, kArithShiftRight, kCount
};
inline constexpr std::array<std::string_view, static_cast<size_t>(AluOp::kCount)> kAluOpNames = {
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "is_equal", "not_equal", "is_ge", "is_gt",
    "is_le", "is_lt", "logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor",
    "logical_shift_left", "arith_shift_right"};
enum class ReduceOp : uint32_t { kAdd, kMaximum, kMinimum, kCount };
inline constexpr std::array<std::string_view, static_cast<size_t>(ReduceOp::kCount)> kReduceOpNames = {
    "add", "maximum", "minimum"};

// The entry of `names` (kEngineNames or one of the tables above) called `name`; nullopt when
// there is none.
template <typename E, size_t N>
std::optional<E> FromName(const std::array<std::string_view, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

struct Instruction {
  Opcode opcode = Opcode::kMemset;
  uint32_t source_op = 0;          // index of the recorded op in the group
  std::vector<Access> operands;    // inputs first, then the output
  uint32_t func = 0;               // activation function / ALU op / reduce op (table index)
  uint32_t flags = 0;              // kAccumulate, ...
  double imm = 0;                  // scale, immediate scalar, memset value, iota base
  double imm2 = 0;                 // iota steps (partition), ...
  double imm3 = 0;                 // iota step (free)
  uint32_t semaphore = 0;          // signal / wait
  uint32_t value = 0;              // wait: the count to reach
  static constexpr uint32_t kAccumulate = 1;
};

// The name of an instruction's func: its entry in the table of its opcode (kActFuncNames,
// kAluOpNames, kReduceOpNames); empty for an opcode that takes none. Decode refuses a func
// outside its opcode's table.
std::string_view FuncName(const Instruction& in);

struct InstructionStream {
  std::string target = "trn2";
  std::vector<Buffer> buffers;
  std::array<std::vector<Instruction>, kEngines> queues;
};

std::string Encode(const InstructionStream& stream);
// Errors (DataLoss) name what is wrong: magic, version, truncation, an unknown opcode or
// engine, an operand naming a buffer that does not exist, more than 4 free dimensions.
absl::StatusOr<InstructionStream> Decode(const std::string& bytes);
// One line per buffer and per instruction, queue by queue.
std::string Disassemble(const InstructionStream& stream);

}  // namespace trn::runtime::neuroncore
