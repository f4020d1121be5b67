// The NeuronCore model: functional results as the engines compute them (bf16 inputs, fp32
// accumulation, round-to-nearest-even stores), modeled time from the public cost formulas
// (docs/trn_target.md §2.3/2.4), engines in parallel ordered only by semaphores, and errors for
// deadlocks and out-of-range accesses.
#include "runtime/neuroncore/model.h"

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace nc = trn::runtime::neuroncore;

namespace {

uint16_t ToBf16(float f) {  // reference rounding (nearest even), written independently
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const uint32_t lsb = (b >> 16) & 1;
  return static_cast<uint16_t>((b + 0x7fff + lsb) >> 16);
}
float FromBf16(uint16_t h) {
  uint32_t b = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

nc::Access Rows(uint32_t buffer, uint32_t partitions, int64_t free, int64_t partition_stride = 0) {
  nc::Access a;
  a.buffer = buffer;
  a.partitions = partitions;
  a.partition_stride = partition_stride;
  a.sizes = {free};
  a.strides = {1};
  return a;
}

nc::Instruction Instr(nc::Opcode op, std::vector<nc::Access> operands, uint32_t source_op = 0) {
  nc::Instruction in;
  in.opcode = op;
  in.operands = std::move(operands);
  in.source_op = source_op;
  return in;
}

nc::Instruction Sync(nc::Opcode op, uint32_t sem, uint32_t value = 0) {
  nc::Instruction in;
  in.opcode = op;
  in.semaphore = sem;
  in.value = value;
  return in;
}

std::vector<nc::Instruction>& Q(nc::InstructionStream& s, nc::Engine e) { return s.queues[static_cast<int>(e)]; }

const nc::TargetSpec kTrn2 = *nc::TargetByName("trn2");

}  // namespace

TEST_CASE("a bf16 matmul pipeline computes what TensorE computes", "[model]") {
  const int K = 128, M = 64, N = 256;
  std::vector<uint16_t> a(K * M), b(K * N);
  std::vector<float> out(M * N, -1.0f);
  for (int i = 0; i < K * M; ++i) a[i] = ToBf16(std::sin(0.37f * i));
  for (int i = 0; i < K * N; ++i) b[i] = ToBf16(std::cos(0.11f * i));
  nc::InstructionStream s;
  s.buffers = {
      {nc::Space::kHbm, nc::DType::kBF16, 0, 0, static_cast<uint64_t>(2 * K * M), 0, 0},   // 0: A [K, M]
      {nc::Space::kHbm, nc::DType::kBF16, 0, 0, static_cast<uint64_t>(2 * K * N), 0, 1},   // 1: B [K, N]
      {nc::Space::kHbm, nc::DType::kF32, 0, 0, static_cast<uint64_t>(4 * M * N), 0, 2},    // 2: out [M, N]
      {nc::Space::kSbuf, nc::DType::kBF16, K, 0, 2 * M, 0, -1},                            // 3: stationary
      {nc::Space::kSbuf, nc::DType::kBF16, K, 0, 2 * N, 1024, -1},                         // 4: moving
      {nc::Space::kPsum, nc::DType::kF32, M, 0, 4 * N, 0, -1},                             // 5: accumulator
      {nc::Space::kSbuf, nc::DType::kF32, M, 0, 4 * N, 4096, -1},                          // 6: result
  };
  Q(s, nc::Engine::kDma) = {Instr(nc::Opcode::kDmaCopy, {Rows(0, K, M, M), Rows(3, K, M)}, 1),
                            Instr(nc::Opcode::kDmaCopy, {Rows(1, K, N, N), Rows(4, K, N)}, 2),
                            Sync(nc::Opcode::kSignal, 0), Sync(nc::Opcode::kWait, 2, 1),
                            Instr(nc::Opcode::kDmaCopy, {Rows(6, M, N), Rows(2, M, N, N)}, 5)};
  Q(s, nc::Engine::kTensor) = {Sync(nc::Opcode::kWait, 0, 1),
                               Instr(nc::Opcode::kMatmul, {Rows(3, K, M), Rows(4, K, N), Rows(5, M, N)}, 3),
                               Sync(nc::Opcode::kSignal, 1)};
  Q(s, nc::Engine::kVector) = {Sync(nc::Opcode::kWait, 1, 1),
                               Instr(nc::Opcode::kTensorCopy, {Rows(5, M, N), Rows(6, M, N)}, 4),
                               Sync(nc::Opcode::kSignal, 2)};
  absl::StatusOr<nc::RunReport> r =
      nc::Run(s, kTrn2, {{a.data(), 2 * K * M}, {b.data(), 2 * K * N}, {out.data(), 4 * M * N}});
  REQUIRE(r.ok());
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      float want = 0;
      for (int k = 0; k < K; ++k) want += FromBf16(a[k * M + m]) * FromBf16(b[k * N + n]);
      REQUIRE(out[m * N + n] == want);  // same products, same fp32 summation order
    }
  }
  CHECK(r->matmul_flops == 2LL * K * M * N);
  CHECK(r->dma_bytes == 2 * K * M + 2 * K * N + 4 * M * N);
  // TensorE: max(min(64, M), N) cycles at 2.4 GHz ([COST] nc_matmul, [G3]).
  CHECK(r->engines[0].busy_ns == Approx(N / 2.4));
  // The stages are chained by semaphores: the run is at least their sum.
  double chain = 0;
  for (const auto& e : r->engines) chain += e.busy_ns;
  CHECK(r->modeled_ns >= chain - 1e-9);
}

TEST_CASE("modeled time scales with the work and DMA is charged by bytes", "[model]") {
  auto matmul_ns = [](int n, nc::DType dt) {
    nc::InstructionStream s;
    s.buffers = {{nc::Space::kSbuf, dt, 128, 0, 4 * 128, 0, -1},
                 {nc::Space::kSbuf, dt, 128, 0, static_cast<uint64_t>(4 * n), 8192, -1},
                 {nc::Space::kPsum, nc::DType::kF32, 128, 0, static_cast<uint64_t>(4 * n), 0, -1}};
    Q(s, nc::Engine::kTensor) = {Instr(nc::Opcode::kMatmul, {Rows(0, 128, 128), Rows(1, 128, n), Rows(2, 128, n)})};
    return nc::Run(s, kTrn2, {})->modeled_ns;
  };
  CHECK(matmul_ns(512, nc::DType::kBF16) == Approx(2 * matmul_ns(256, nc::DType::kBF16)));
  CHECK(matmul_ns(256, nc::DType::kF32) == Approx(4 * matmul_ns(256, nc::DType::kBF16)));  // fp32 at 1/4 rate
  // 128x128x512 bf16 in 512 cycles at 2.4 GHz = 78.6 TFLOPS, the page's 79 ([G3]).
  const double tflops = 2.0 * 128 * 128 * 512 / matmul_ns(512, nc::DType::kBF16) / 1e3;
  CHECK(tflops == Approx(78.6).epsilon(0.01));

  auto dma_ns = [](uint32_t partitions, int64_t free) {
    std::vector<float> host(static_cast<size_t>(partitions * free));
    nc::InstructionStream s;
    s.buffers = {{nc::Space::kHbm, nc::DType::kF32, 0, 0, host.size() * 4, 0, 0},
                 {nc::Space::kSbuf, nc::DType::kF32, partitions, 0, static_cast<uint64_t>(4 * free), 0, -1}};
    Q(s, nc::Engine::kDma) = {Instr(nc::Opcode::kDmaCopy, {Rows(0, partitions, free, free), Rows(1, partitions, free)})};
    return nc::Run(s, kTrn2, {{host.data(), static_cast<int64_t>(host.size() * 4)}})->modeled_ns;
  };
  // 32 KiB on one engine: [DMA] "Example 1" profiled 1416 ns on Trn2.
  CHECK(dma_ns(1, 8192) == Approx(1416).epsilon(0.02));
  CHECK(dma_ns(1, 16384) == Approx(2 * dma_ns(1, 8192)));
  CHECK(dma_ns(16, 8192) == Approx(dma_ns(1, 8192)));  // 16 partitions over 16 engines
}

TEST_CASE("engines overlap unless a semaphore orders them", "[model]") {
  nc::InstructionStream s;
  s.buffers = {{nc::Space::kSbuf, nc::DType::kF32, 128, 0, 4 * 1024, 0, -1},
               {nc::Space::kSbuf, nc::DType::kF32, 128, 0, 4 * 1024, 8192, -1}};
  Q(s, nc::Engine::kVector) = {Instr(nc::Opcode::kMemset, {Rows(0, 128, 1024)})};
  Q(s, nc::Engine::kGpSimd) = {Instr(nc::Opcode::kMemset, {Rows(1, 128, 1024)})};
  const nc::RunReport parallel = *nc::Run(s, kTrn2, {});
  const double vec = parallel.engines[static_cast<int>(nc::Engine::kVector)].busy_ns;
  const double gps = parallel.engines[static_cast<int>(nc::Engine::kGpSimd)].busy_ns;
  CHECK(parallel.modeled_ns == Approx(std::max(vec, gps)));
  Q(s, nc::Engine::kVector).push_back(Sync(nc::Opcode::kSignal, 4));
  Q(s, nc::Engine::kGpSimd).insert(Q(s, nc::Engine::kGpSimd).begin(), Sync(nc::Opcode::kWait, 4, 1));
  const nc::RunReport ordered = *nc::Run(s, kTrn2, {});
  CHECK(ordered.modeled_ns == Approx(vec + gps));
}

TEST_CASE("vector, scalar and gpsimd instructions compute their functions", "[model]") {
  nc::InstructionStream s;
  s.buffers = {{nc::Space::kSbuf, nc::DType::kF32, 4, 0, 4 * 8, 0, -1},
               {nc::Space::kSbuf, nc::DType::kF32, 4, 0, 4 * 8, 64, -1},
               {nc::Space::kSbuf, nc::DType::kF32, 4, 0, 4, 128, -1},
               {nc::Space::kSbuf, nc::DType::kBF16, 4, 0, 2 * 8, 256, -1},
               {nc::Space::kHbm, nc::DType::kF32, 0, 0, 4 * 4 * 8 * 2 + 4 * 4 + 4 * 8 * 4, 0, 0}};
  nc::Instruction iota = Instr(nc::Opcode::kIota, {Rows(0, 4, 8)});
  iota.imm = -2;    // base
  iota.imm2 = 8;    // per partition
  iota.imm3 = 0.5;  // per free element
  nc::Instruction gelu = Instr(nc::Opcode::kActivation, {Rows(0, 4, 8), Rows(1, 4, 8)});
  gelu.func = 4;  // gelu
  gelu.imm = 1;   // scale
  nc::Instruction sum = Instr(nc::Opcode::kTensorReduce, {Rows(0, 4, 8), Rows(2, 4, 1)});
  nc::Instruction half = Instr(nc::Opcode::kMemset, {Rows(3, 4, 8)});
  half.imm = 1.0 + std::ldexp(1.0, -8);  // a tie between two bf16 values: rounds to even (1.0)
  nc::Access out_a = Rows(4, 4, 8, 8), out_b = Rows(4, 4, 8, 8), out_c = Rows(4, 4, 1, 1), out_d = Rows(4, 4, 8, 8);
  out_b.offset = 32;
  out_c.offset = 64;
  out_d.offset = 68;
  Q(s, nc::Engine::kGpSimd) = {iota, half, Sync(nc::Opcode::kSignal, 0)};
  Q(s, nc::Engine::kScalar) = {Sync(nc::Opcode::kWait, 0, 1), gelu, Sync(nc::Opcode::kSignal, 1)};
  Q(s, nc::Engine::kVector) = {Sync(nc::Opcode::kWait, 0, 1), sum, Sync(nc::Opcode::kSignal, 1)};
  Q(s, nc::Engine::kDma) = {Sync(nc::Opcode::kWait, 1, 2), Instr(nc::Opcode::kDmaCopy, {Rows(0, 4, 8), out_a}),
                            Instr(nc::Opcode::kDmaCopy, {Rows(1, 4, 8), out_b}),
                            Instr(nc::Opcode::kDmaCopy, {Rows(2, 4, 1), out_c}),
                            Instr(nc::Opcode::kDmaCopy, {Rows(3, 4, 8), out_d})};
  std::vector<float> host(4 * 8 * 2 + 4 + 4 * 8);
  REQUIRE(nc::Run(s, kTrn2, {{host.data(), static_cast<int64_t>(host.size() * 4)}}).ok());
  for (int p = 0; p < 4; ++p) {
    float row = 0;
    for (int f = 0; f < 8; ++f) {
      const float x = -2.0f + 8.0f * p + 0.5f * f;
      CHECK(host[p * 8 + f] == x);
      CHECK(host[32 + p * 8 + f] == Approx(0.5 * x * (1 + std::erf(x / std::sqrt(2.0)))).epsilon(1e-6));
      CHECK(host[68 + p * 8 + f] == 1.0f);
      row += x;
    }
    CHECK(host[64 + p] == row);
  }
}

TEST_CASE("scalar sin is defined on [-pi, pi] only, as ScalarE's", "[model]") {
  // ScalarE's sin does no range reduction (docs/trn_target.md): the model gives NaN outside
  // [-pi, pi] (plus a few ulp), so a lowering that forgets to reduce fails its tests.
  nc::InstructionStream s;
  s.buffers = {{nc::Space::kSbuf, nc::DType::kF32, 1, 0, 4 * 6, 0, -1},
               {nc::Space::kSbuf, nc::DType::kF32, 1, 0, 4 * 6, 64, -1},
               {nc::Space::kHbm, nc::DType::kF32, 0, 0, 4 * 12, 0, 0}};
  const std::vector<float> xs = {0.0f, 1.0f, -3.0f, 3.14159265f, 3.2f, -100.0f};
  nc::Access in = Rows(2, 1, 6), out = Rows(2, 1, 6);
  out.offset = 6;
  nc::Instruction sin = Instr(nc::Opcode::kActivation, {Rows(0, 1, 6), Rows(1, 1, 6)});
  sin.func = 14;  // sin: trn::ir::ActivationOp::kFunctions
  sin.imm = 1;    // scale
  Q(s, nc::Engine::kDma) = {Instr(nc::Opcode::kDmaCopy, {in, Rows(0, 1, 6)}), Sync(nc::Opcode::kSignal, 0),
                            Sync(nc::Opcode::kWait, 1, 1), Instr(nc::Opcode::kDmaCopy, {Rows(1, 1, 6), out})};
  Q(s, nc::Engine::kScalar) = {Sync(nc::Opcode::kWait, 0, 1), sin, Sync(nc::Opcode::kSignal, 1)};
  std::vector<float> host(12);
  std::copy(xs.begin(), xs.end(), host.begin());
  REQUIRE(nc::Run(s, kTrn2, {{host.data(), static_cast<int64_t>(host.size() * 4)}}).ok());
  for (int i = 0; i < 4; ++i) CHECK(host[6 + i] == Approx(std::sin(xs[i])).margin(1e-7));
  CHECK(std::isnan(host[10]));
  CHECK(std::isnan(host[11]));
}

TEST_CASE("deadlocks and out-of-range accesses are errors naming the instruction", "[model]") {
  nc::InstructionStream s;
  s.buffers = {{nc::Space::kSbuf, nc::DType::kF32, 128, 0, 64, 0, -1}};
  Q(s, nc::Engine::kTensor) = {Sync(nc::Opcode::kWait, 3, 1)};
  absl::StatusOr<nc::RunReport> r = nc::Run(s, kTrn2, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(r.status().message()).find("deadlock: tensor instruction 0 (wait") != std::string::npos);

  s.queues = {};
  Q(s, nc::Engine::kVector) = {Instr(nc::Opcode::kMemset, {Rows(0, 128, 32)}, 42)};  // 32 floats > 64 bytes
  r = nc::Run(s, kTrn2, {});
  REQUIRE_FALSE(r.ok());
  CHECK(std::string(r.status().message()).find("vector instruction 0 (memset, from op 42)") != std::string::npos);
  CHECK(std::string(r.status().message()).find("outside buffer 0") != std::string::npos);

  s.buffers[0].bytes_per_partition = 300 * 1024;  // more than Trn2's 224 KiB per partition ([G3])
  CHECK(std::string(nc::Run(s, kTrn2, {}).status().message()).find("does not fit SBUF of trn2") != std::string::npos);
  CHECK_FALSE(nc::TargetByName("trn1").has_value());
}

TEST_CASE("a failing instruction names the recorded op it came from", "[model]") {
  nc::InstructionStream s;
  s.buffers = {{nc::Space::kSbuf, nc::DType::kF32, 128, 0, 4 * 64, 0, -1}};
  Q(s, nc::Engine::kVector) = {Instr(nc::Opcode::kMemset, {Rows(0, 128, 64)}, /*source_op=*/1),
                               Instr(nc::Opcode::kMemset, {Rows(0, 128, 65)}, /*source_op=*/3)};  // one too far
  absl::StatusOr<nc::RunReport> r = nc::Run(s, kTrn2, {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("from op 3") != std::string::npos);
  REQUIRE(nc::FailedSourceOp(r.status()).has_value());
  CHECK(*nc::FailedSourceOp(r.status()) == 3);  // the executor blames op 3, not the group's first
  CHECK_FALSE(nc::FailedSourceOp(absl::InternalError("no payload")).has_value());
}

TEST_CASE("int64 HBM narrows to i32 tiles, integer instructions are exact, dma_gather picks rows", "[model]") {
  // HBM: int64 values (beyond 2^24, inside int32), int64 result, a [10, 3] f32 table, 4 indices.
  std::vector<int64_t> in = {16777217, -16777219, 100000007, 5};
  std::vector<int64_t> out(4, 0);
  std::vector<float> table(30);
  for (int i = 0; i < 30; ++i) table[i] = static_cast<float>(i) + 0.25f;
  std::vector<int64_t> ids = {9, 0, 3, 3};
  std::vector<float> rows(12, -1.0f);
  nc::InstructionStream s;
  s.buffers = {{nc::Space::kHbm, nc::DType::kI64, 0, 0, 32, 0, 0},
               {nc::Space::kHbm, nc::DType::kI64, 0, 0, 32, 0, 1},
               {nc::Space::kSbuf, nc::DType::kI32, 4, 0, 4, 0, -1},   // 2: x
               {nc::Space::kSbuf, nc::DType::kI32, 4, 0, 4, 64, -1},  // 3: iota p
               {nc::Space::kSbuf, nc::DType::kI32, 4, 0, 4, 128, -1},  // 4: x * 3 + p
               {nc::Space::kHbm, nc::DType::kF32, 0, 0, 120, 0, 2},   // 5: table
               {nc::Space::kHbm, nc::DType::kI64, 0, 0, 32, 0, 3},    // 6: ids
               {nc::Space::kSbuf, nc::DType::kI32, 4, 0, 4, 192, -1},  // 7: ids tile
               {nc::Space::kSbuf, nc::DType::kF32, 4, 0, 12, 256, -1},  // 8: gathered rows
               {nc::Space::kHbm, nc::DType::kF32, 0, 0, 48, 0, 4}};   // 9: rows out
  nc::Instruction times3 = Instr(nc::Opcode::kTensorScalar, {Rows(2, 4, 1), Rows(4, 4, 1)});
  times3.func = 2;  // multiply
  times3.imm = 3;
  nc::Instruction iota = Instr(nc::Opcode::kIota, {Rows(3, 4, 1)});
  iota.imm2 = 1;  // p
  nc::Instruction add = Instr(nc::Opcode::kTensorTensor, {Rows(4, 4, 1), Rows(3, 4, 1), Rows(4, 4, 1)});
  nc::Access table_rows = Rows(5, 10, 3, 3);  // 10 rows of 3
  Q(s, nc::Engine::kDma) = {Instr(nc::Opcode::kDmaCopy, {Rows(0, 4, 1, 1), Rows(2, 4, 1)}),
                            Instr(nc::Opcode::kDmaCopy, {Rows(6, 4, 1, 1), Rows(7, 4, 1)}),
                            Instr(nc::Opcode::kDmaGather, {table_rows, Rows(7, 4, 1), Rows(8, 4, 3)}),
                            Instr(nc::Opcode::kDmaCopy, {Rows(8, 4, 3), Rows(9, 4, 3, 3)}),
                            Sync(nc::Opcode::kSignal, 0),
                            Sync(nc::Opcode::kWait, 1, 1),
                            Instr(nc::Opcode::kDmaCopy, {Rows(4, 4, 1), Rows(1, 4, 1, 1)})};
  Q(s, nc::Engine::kGpSimd) = {iota};
  Q(s, nc::Engine::kVector) = {Sync(nc::Opcode::kWait, 0, 1), times3, Sync(nc::Opcode::kWait, 2, 1), add,
                               Sync(nc::Opcode::kSignal, 1)};
  Q(s, nc::Engine::kGpSimd).push_back(Sync(nc::Opcode::kSignal, 2));
  std::vector<nc::HostBinding> bind = {{in.data(), 32}, {out.data(), 32}, {table.data(), 120}, {ids.data(), 32},
                                       {rows.data(), 48}};
  absl::StatusOr<nc::RunReport> r = nc::Run(s, kTrn2, bind);
  REQUIRE(r.ok());
  for (int p = 0; p < 4; ++p) CHECK(out[p] == in[p] * 3 + p);  // exact, beyond fp32's 2^24
  for (int p = 0; p < 4; ++p) {
    for (int j = 0; j < 3; ++j) CHECK(rows[p * 3 + j] == table[ids[p] * 3 + j]);
  }
  CHECK(r->engines[static_cast<int>(nc::Engine::kGpSimd)].busy_ns > 0);

  ids[2] = 10;  // outside the table: OutOfRange, naming the instruction
  absl::StatusOr<nc::RunReport> bad = nc::Run(s, kTrn2, bind);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kOutOfRange);
  CHECK(bad.status().message().find("dma_gather: index 10 is out of range for a table of 10 rows") != std::string::npos);
}

TEST_CASE("dma_scatter_add adds rows by index in partition order", "[model]") {
  // table [5, 3] += src [4, 3] at rows {4, 1, 4, 0}: row 4 gets two rows, in order.
  std::vector<float> table(15);
  for (int i = 0; i < 15; ++i) table[i] = static_cast<float>(i);
  const std::vector<float> before = table;
  std::vector<float> src(12);
  for (int i = 0; i < 12; ++i) src[i] = 0.5f * static_cast<float>(i) - 2.0f;
  src[0] = 1e8f;  // row 4 += 1e8, then += src[2]: fp32 rounding in that order
  std::vector<int64_t> ids = {4, 1, 4, 0};
  nc::InstructionStream s;
  s.buffers = {{nc::Space::kHbm, nc::DType::kF32, 0, 0, 60, 0, 0},     // 0: table
               {nc::Space::kHbm, nc::DType::kF32, 0, 0, 48, 0, 1},     // 1: src
               {nc::Space::kHbm, nc::DType::kI64, 0, 0, 32, 0, 2},     // 2: ids
               {nc::Space::kSbuf, nc::DType::kF32, 4, 0, 12, 0, -1},   // 3: src tile
               {nc::Space::kSbuf, nc::DType::kI32, 4, 0, 4, 64, -1}};  // 4: ids tile
  Q(s, nc::Engine::kDma) = {Instr(nc::Opcode::kDmaCopy, {Rows(1, 4, 3, 3), Rows(3, 4, 3)}),
                            Instr(nc::Opcode::kDmaCopy, {Rows(2, 4, 1, 1), Rows(4, 4, 1)}),
                            Instr(nc::Opcode::kDmaScatterAdd, {Rows(3, 4, 3), Rows(4, 4, 1), Rows(0, 5, 3, 3)})};
  std::vector<nc::HostBinding> bind = {{table.data(), 60}, {src.data(), 48}, {ids.data(), 32}};
  absl::StatusOr<nc::RunReport> r = nc::Run(s, kTrn2, bind);
  REQUIRE(r.ok());
  std::vector<float> want = before;
  for (int p = 0; p < 4; ++p) {
    for (int j = 0; j < 3; ++j) want[ids[p] * 3 + j] = want[ids[p] * 3 + j] + src[p * 3 + j];
  }
  CHECK(table == want);
  CHECK(table[2 * 3] == before[2 * 3]);  // a row no index names is untouched
  CHECK(r->dma_bytes > 0);

  ids[3] = 5;  // outside the table: OutOfRange, naming the instruction
  absl::StatusOr<nc::RunReport> bad = nc::Run(s, kTrn2, bind);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kOutOfRange);
  CHECK(bad.status().message().find("dma_scatter_add: index 5 is out of range for a table of 5 rows") != std::string::npos);
}

TEST_CASE("bitwise and, or, xor and the shifts act on the two's-complement integer values", "[model]") {
  // int64 HBM -> i32 tiles; x & y, x | y, x ^ y tile by tile, x ^ -1 (bitwise not), x & 0xf0 and
  // shifts with an immediate; negative values and values beyond 2^24 included; each result
  // stored back.
  const std::vector<int64_t> x = {12, -7, 16777217, -1, 0, 1 << 30};
  const std::vector<int64_t> y = {10, 5, 16777219, 123456789, -3, 3};
  const int n = static_cast<int>(x.size());
  std::vector<std::vector<int64_t>> out(9, std::vector<int64_t>(n, 0));
  nc::InstructionStream s;
  s.buffers = {{nc::Space::kHbm, nc::DType::kI64, 0, 0, 48, 0, 0}, {nc::Space::kHbm, nc::DType::kI64, 0, 0, 48, 0, 1},
               {nc::Space::kSbuf, nc::DType::kI32, 6, 0, 4, 0, -1}, {nc::Space::kSbuf, nc::DType::kI32, 6, 0, 4, 64, -1}};
  std::vector<nc::HostBinding> bind = {{const_cast<int64_t*>(x.data()), 48}, {const_cast<int64_t*>(y.data()), 48}};
  Q(s, nc::Engine::kDma) = {Instr(nc::Opcode::kDmaCopy, {Rows(0, 6, 1, 1), Rows(2, 6, 1)}),
                            Instr(nc::Opcode::kDmaCopy, {Rows(1, 6, 1, 1), Rows(3, 6, 1)}), Sync(nc::Opcode::kSignal, 0),
                            Sync(nc::Opcode::kWait, 1, 1)};
  Q(s, nc::Engine::kVector) = {Sync(nc::Opcode::kWait, 0, 1)};
  auto result = [&](nc::Instruction in) {  // into a fresh tile, then HBM binding 2 + k
    const uint32_t tile = static_cast<uint32_t>(s.buffers.size()), hbm = tile + 1;
    const int32_t binding = static_cast<int32_t>(bind.size());
    s.buffers.push_back({nc::Space::kSbuf, nc::DType::kI32, 6, 0, 4, 128 + 64 * static_cast<uint64_t>(binding), -1});
    s.buffers.push_back({nc::Space::kHbm, nc::DType::kI64, 0, 0, 48, 0, binding});
    bind.push_back({out[binding - 2].data(), 48});
    in.operands.push_back(Rows(tile, 6, 1));
    Q(s, nc::Engine::kVector).push_back(in);
    Q(s, nc::Engine::kDma).push_back(Instr(nc::Opcode::kDmaCopy, {Rows(tile, 6, 1), Rows(hbm, 6, 1, 1)}));
  };
  for (nc::AluOp op : {nc::AluOp::kBitwiseAnd, nc::AluOp::kBitwiseOr, nc::AluOp::kBitwiseXor}) {
    nc::Instruction in = Instr(nc::Opcode::kTensorTensor, {Rows(2, 6, 1), Rows(3, 6, 1)});
    in.func = static_cast<uint32_t>(op);
    result(in);
  }
  const std::pair<nc::AluOp, double> scalar_ops[] = {
      {nc::AluOp::kBitwiseXor, -1.0},        {nc::AluOp::kBitwiseAnd, 240.0},
      {nc::AluOp::kLogicalShiftLeft, 1.0},   {nc::AluOp::kArithShiftRight, 3.0},
      {nc::AluOp::kLogicalShiftLeft, 32.0},  {nc::AluOp::kArithShiftRight, 40.0}};
  for (const auto& [op, imm] : scalar_ops) {
    nc::Instruction in = Instr(nc::Opcode::kTensorScalar, {Rows(2, 6, 1)});
    in.func = static_cast<uint32_t>(op);
    in.imm = imm;
    result(in);
  }
  Q(s, nc::Engine::kVector).push_back(Sync(nc::Opcode::kSignal, 1));  // the stores wait for it
  absl::StatusOr<nc::RunReport> r = nc::Run(s, kTrn2, bind);
  REQUIRE(r.ok());
  for (int i = 0; i < n; ++i) {
    CHECK(out[0][i] == (x[i] & y[i]));
    CHECK(out[1][i] == (x[i] | y[i]));
    CHECK(out[2][i] == (x[i] ^ y[i]));
    CHECK(out[3][i] == ~x[i]);
    CHECK(out[4][i] == (x[i] & 0xf0));
    // The shifts are the 32-bit ALU's: x << 1 wraps to int32 (2^30 << 1 is -2^31), a count
    // outside [0, 31] shifts everything out (0 to the left, the sign to the right).
    CHECK(out[5][i] == static_cast<int32_t>(static_cast<uint32_t>(x[i]) << 1));
    CHECK(out[6][i] == (x[i] >> 3));
    CHECK(out[7][i] == 0);
    CHECK(out[8][i] == (x[i] < 0 ? -1 : 0));
  }
  CHECK(nc::FromName<nc::AluOp>(nc::kAluOpNames, "bitwise_xor") == nc::AluOp::kBitwiseXor);
}
