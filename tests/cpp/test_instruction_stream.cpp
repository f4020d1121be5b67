// The trn instruction stream format: encode/decode round-trips exactly (randomised streams),
// every truncation and malformed field is rejected with a reason, and the disassembly names
// engines, opcodes, operands and the recorded op of each instruction.
#include "runtime/neuroncore/instruction_stream.h"

#include <random>
#include <string>

#include <catch2/catch.hpp>

namespace nc = trn::runtime::neuroncore;

namespace {

nc::InstructionStream RandomStream(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  nc::InstructionStream s;
  s.target = pick(2) ? "trn2" : "trn3";
  const int buffers = 1 + pick(6);
  for (int i = 0; i < buffers; ++i) {
    nc::Buffer b;
    b.space = static_cast<nc::Space>(pick(3));
    b.dtype = static_cast<nc::DType>(pick(6));
    b.partition_start = pick(2) * 64;
    b.partitions = 1 + pick(128 - static_cast<int>(b.partition_start));  // within the 128 partitions
    b.bytes_per_partition = 4 * (1 + pick(4096));
    b.offset = 64 * pick(100);
    b.binding = b.space == nc::Space::kHbm ? pick(8) : -1;
    s.buffers.push_back(b);
  }
  for (auto& queue : s.queues) {
    const int n = pick(8);
    for (int i = 0; i < n; ++i) {
      nc::Instruction in;
      in.opcode = static_cast<nc::Opcode>(pick(static_cast<int>(nc::Opcode::kCount)));
      in.source_op = pick(1000);
      in.func = pick(in.opcode == nc::Opcode::kTensorReduce ? 3 : 13);  // within its table
      in.flags = pick(2);
      in.imm = pick(100) * 0.25;
      in.imm2 = -pick(10);
      in.imm3 = pick(3);
      in.semaphore = pick(32);
      in.value = pick(5);
      const int operands = pick(4);
      for (int k = 0; k < operands; ++k) {
        nc::Access a;
        a.buffer = pick(buffers);
        a.partition_start = pick(64);
        a.partitions = 1 + pick(64);
        a.partition_stride = pick(2) * 512;
        a.offset = pick(4096);
        const int dims = pick(5);
        for (int d = 0; d < dims; ++d) {
          a.sizes.push_back(1 + pick(32));  // (the decoder bounds a stream's total elements)
          a.strides.push_back(pick(3) - 1);
        }
        in.operands.push_back(a);
      }
      queue.push_back(in);
    }
  }
  return s;
}

}  // namespace

TEST_CASE("encode/decode round-trips exactly", "[stream]") {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    const nc::InstructionStream s = RandomStream(seed);
    const std::string bytes = nc::Encode(s);
    absl::StatusOr<nc::InstructionStream> back = nc::Decode(bytes);
    INFO("seed " << seed);
    REQUIRE(back.ok());
    CHECK(nc::Encode(*back) == bytes);
    CHECK(nc::Disassemble(*back) == nc::Disassemble(s));
  }
}

TEST_CASE("every truncation and malformed field is rejected with a reason", "[stream]") {
  const std::string bytes = nc::Encode(RandomStream(7));
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("truncated to " << n);
    CHECK_FALSE(nc::Decode(bytes.substr(0, n)).ok());
  }
  CHECK(nc::Decode(bytes + "x").status().message().find("trailing bytes") != std::string::npos);
  std::string v9 = bytes;  // a version this build does not read
  v9[8] = 9;
  CHECK(nc::Decode(v9).status().message().find("format version 9") != std::string::npos);
  CHECK(nc::Decode("TRNCACHE" + bytes.substr(8)).status().message().find("not an instruction stream") !=
        std::string::npos);

  nc::InstructionStream s;
  s.buffers.push_back(nc::Buffer{});
  nc::Instruction in;
  in.opcode = nc::Opcode::kMemset;
  in.operands.push_back(nc::Access{});
  in.operands[0].buffer = 5;  // no such buffer
  s.queues[3].push_back(in);
  CHECK(nc::Decode(nc::Encode(s)).status().message().find("names buffer 5 of 1") != std::string::npos);
  s.queues[3][0].operands[0].buffer = 0;
  s.queues[3][0].operands[0].sizes.assign(5, 1);
  s.queues[3][0].operands[0].strides.assign(5, 1);
  CHECK(nc::Decode(nc::Encode(s)).status().message().find("5 free dimensions") != std::string::npos);
  s.queues[3][0].operands[0].sizes.resize(1);
  s.queues[3][0].operands[0].strides.resize(1);
  s.queues[3][0].opcode = static_cast<nc::Opcode>(99);
  CHECK(nc::Decode(nc::Encode(s)).status().message().find("unknown opcode 99") != std::string::npos);
  s.queues[3][0].opcode = nc::Opcode::kMemset;
  s.buffers[0].dtype = nc::DType::kI64;  // an i64 tile: engines have no 64-bit integers
  CHECK(nc::Decode(nc::Encode(s)).status().message().find("an i64 tile") != std::string::npos);
}

TEST_CASE("the disassembly names engines, opcodes, operands and source ops", "[stream]") {
  nc::InstructionStream s;
  s.buffers = {nc::Buffer{nc::Space::kHbm, nc::DType::kF32, 0, 0, 65536, 0, 2},
               nc::Buffer{nc::Space::kSbuf, nc::DType::kBF16, 128, 0, 1024, 4096, -1},
               nc::Buffer{nc::Space::kPsum, nc::DType::kF32, 128, 0, 2048, 0, -1}};
  nc::Instruction mm;
  mm.opcode = nc::Opcode::kMatmul;
  mm.source_op = 17;
  mm.flags = nc::Instruction::kAccumulate;
  nc::Access st{1, 0, 128, 0, 0, {128}, {1}};
  nc::Access acc{2, 0, 128, 0, 0, {512}, {1}};
  mm.operands = {st, st, acc};
  s.queues[static_cast<int>(nc::Engine::kTensor)].push_back(mm);
  nc::Instruction wait;
  wait.opcode = nc::Opcode::kWait;
  wait.semaphore = 3;
  wait.value = 2;
  s.queues[static_cast<int>(nc::Engine::kVector)].push_back(wait);
  nc::Instruction exp;
  exp.opcode = nc::Opcode::kActivation;
  exp.func = static_cast<uint32_t>(nc::ActFunc::kExp);
  exp.operands = {st, st};
  s.queues[static_cast<int>(nc::Engine::kScalar)].push_back(exp);
  const std::string text = nc::Disassemble(s);
  CHECK(text.find("activation    s1[p0+128, +0, (128:1)], s1[p0+128, +0, (128:1)] exp  ; op 0") != std::string::npos);
  CHECK(text.find("buffer h0: hbm f32, 65536 bytes, argument 2") != std::string::npos);
  CHECK(text.find("buffer s1: sbuf bf16, partitions 0..127, 1024 bytes/partition at 4096") != std::string::npos);
  CHECK(text.find("queue tensor (1 instructions)") != std::string::npos);
  CHECK(text.find("matmul        s1[p0+128, +0, (128:1)], s1[p0+128, +0, (128:1)], p2[p0+128, +0, (512:1)] "
                  "accumulate  ; op 17") != std::string::npos);
  CHECK(text.find("wait          sem 3 >= 2  ; op 0") != std::string::npos);
}

// Streams from a cache entry or a peer are input: a crafted one must be refused with
// InvalidArgument, quickly and without allocating what it declares (issue 34 item 5).
TEST_CASE("a crafted stream is refused before it allocates or loops", "[neuroncore][stream]") {
  nc::InstructionStream s;
  s.target = "trn2";
  s.buffers.push_back({nc::Space::kSbuf, nc::DType::kF32, 128, 0, 512, 0, -1});
  nc::Instruction in;
  in.opcode = nc::Opcode::kMemset;
  nc::Access a;
  a.partitions = 128;
  a.sizes = {128};
  a.strides = {1};
  in.operands = {a};
  s.queues[1].push_back(in);
  const std::string good = nc::Encode(s);
  REQUIRE(nc::Decode(good).ok());

  // The instruction count of the first queue claims 2^24 instructions in a 30-byte tail.
  const size_t first_queue = 8 + 4 + 4 + s.target.size() + 4 + 30;
  std::string huge = good.substr(0, first_queue);
  const uint32_t count = 1u << 24;
  huge.append(reinterpret_cast<const char*>(&count), 4);
  huge.append(30, '\0');
  absl::StatusOr<nc::InstructionStream> r = nc::Decode(huge);
  CHECK(absl::IsInvalidArgument(r.status()));
  CHECK(r.status().message().find("bad instruction count") != std::string::npos);

  auto refused = [](const nc::InstructionStream& bad, const std::string& what) {
    absl::StatusOr<nc::InstructionStream> got = nc::Decode(nc::Encode(bad));
    CHECK(absl::IsInvalidArgument(got.status()));
    CHECK(got.status().message().find(what) != std::string::npos);
  };
  nc::InstructionStream neg = s;
  neg.queues[1][0].operands[0].sizes = {-5};
  refused(neg, "free dimension 0 has size -5");
  nc::InstructionStream zero = s;
  zero.queues[1][0].operands[0].sizes = {0};
  refused(zero, "has size 0");
  nc::InstructionStream loop = s;  // stride 0 over 2^31 x 2^31: the model would loop ~2^62 times
  loop.queues[1][0].operands[0].sizes = {int64_t{1} << 31, int64_t{1} << 31};
  loop.queues[1][0].operands[0].strides = {0, 0};
  refused(loop, "elements in the stream's accesses");
  nc::InstructionStream overflow = s;  // offset + bytes wrapped around in uint64
  overflow.buffers[0].offset = ~uint64_t{0} - 100;
  refused(overflow, "bytes at");
  nc::InstructionStream parts = s;
  parts.buffers[0].partition_start = 100;
  refused(parts, "partitions 100+128");
  nc::InstructionStream scratch = s;
  scratch.buffers.push_back({nc::Space::kHbm, nc::DType::kF32, 1, 0, uint64_t{1} << 40, 0, -1});
  refused(scratch, "HBM scratch");
}

// The func tables are the encoding shared by the dialect, the emitter and the model: a value
// outside its opcode's table is refused when decoded, and names map both ways.
TEST_CASE("an instruction's function is an entry of its opcode's table", "[stream]") {
  CHECK(nc::FromName<nc::ActFunc>(nc::kActFuncNames, "sin") == nc::ActFunc::kSin);
  CHECK(nc::FromName<nc::AluOp>(nc::kAluOpNames, "is_ge") == nc::AluOp::kIsGe);
  CHECK(nc::FromName<nc::ReduceOp>(nc::kReduceOpNames, "minimum") == nc::ReduceOp::kMinimum);
  CHECK_FALSE(nc::FromName<nc::ReduceOp>(nc::kReduceOpNames, "multiply").has_value());
  nc::InstructionStream s;
  s.buffers.push_back({nc::Space::kSbuf, nc::DType::kF32, 128, 0, 512, 0, -1});
  nc::Access a{0, 0, 128, 0, 0, {1}, {1}};
  nc::Instruction reduce;
  reduce.opcode = nc::Opcode::kTensorReduce;
  reduce.operands = {a, a};
  reduce.func = static_cast<uint32_t>(nc::ReduceOp::kMaximum);
  CHECK(nc::FuncName(reduce) == "maximum");
  s.queues[1].push_back(reduce);
  REQUIRE(nc::Decode(nc::Encode(s)).ok());
  s.queues[1][0].func = static_cast<uint32_t>(nc::ReduceOp::kCount);
  auto bad = nc::Decode(nc::Encode(s));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("unknown function 3 of tensor_reduce") != std::string::npos);
}
