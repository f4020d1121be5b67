// linalg -> trn -> instruction stream -> NeuronCore model, checked against plain C++ references.
// Wrong semaphores show up here as wrong values: the model runs each engine's queue as early as
// its waits allow, so a consumer without a wait reads a tile before its producer wrote it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "mlir_lowering/trn/TrnEmit.h"
#include "runtime/neuroncore/model.h"
#include "runtime/neuroncore/target.h"

namespace nc = trn::runtime::neuroncore;

namespace {

float RoundBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  u &= 0xFFFF0000u;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}

// One argument of the function: its values as floats and its dtype in memory.
struct Arg {
  nc::DType dtype = nc::DType::kF32;
  std::vector<float> values;
};

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

struct Result {
  nc::RunReport report;
  nc::InstructionStream stream;
};

// Compiles `mlir` for `target`, runs it on `args` (updated in place), returns the report.
Result Run(const std::string& mlir, std::vector<Arg>& args, const std::string& target = "trn2") {
  absl::StatusOr<nc::InstructionStream> stream = trn::ir::CompileToStream(mlir, target);
  INFO(stream.status().ToString());
  REQUIRE(stream.ok());
  std::vector<std::vector<uint8_t>> memory(args.size());
  std::vector<nc::HostBinding> bindings;
  for (size_t i = 0; i < args.size(); ++i) {
    const int esize = nc::DTypeBytes(args[i].dtype);
    memory[i].resize(args[i].values.size() * esize);
    for (size_t j = 0; j < args[i].values.size(); ++j) {
      float v = args[i].values[j];
      if (args[i].dtype == nc::DType::kBF16) {
        uint32_t u;
        std::memcpy(&u, &v, 4);
        const uint16_t h = static_cast<uint16_t>(u >> 16);
        std::memcpy(&memory[i][j * 2], &h, 2);
      } else if (args[i].dtype == nc::DType::kU8) {
        memory[i][j] = v != 0 ? 1 : 0;
      } else {
        std::memcpy(&memory[i][j * 4], &v, 4);
      }
    }
    bindings.push_back({memory[i].data(), static_cast<int64_t>(memory[i].size())});
  }
  absl::StatusOr<nc::RunReport> report = nc::Run(*stream, *nc::TargetByName(target), bindings);
  INFO(report.status().ToString());
  REQUIRE(report.ok());
  for (size_t i = 0; i < args.size(); ++i) {
    for (size_t j = 0; j < args[i].values.size(); ++j) {
      if (args[i].dtype == nc::DType::kBF16) {
        uint16_t h;
        std::memcpy(&h, &memory[i][j * 2], 2);
        const uint32_t u = static_cast<uint32_t>(h) << 16;
        std::memcpy(&args[i].values[j], &u, 4);
      } else if (args[i].dtype == nc::DType::kU8) {
        args[i].values[j] = memory[i][j];
      } else {
        std::memcpy(&args[i].values[j], &memory[i][j * 4], 4);
      }
    }
  }
  return {*report, std::move(*stream)};
}

// max |got - want| / (1 + |want|)
double MaxRelError(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]) / (1.0 + std::abs(want[i])));
  }
  return worst;
}

std::string Compile(const std::string& mlir, const std::string& target = "trn2") {
  return trn::ir::CompileToStream(mlir, target).status().ToString();
}

}  // namespace

TEST_CASE("matmul + bias + gelu(tanh) group matches the C++ reference", "[trn][lowering]") {
  const int M = 200, K = 300, N = 640;  // ragged in M and K, two PSUM blocks in N
  const std::string mlir = absl::StrReplaceAll(R"(
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @group(%x: memref<MxKxf32>, %w: memref<KxNxf32>, %bias: memref<Nxf32>, %out: memref<MxNxf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<MxNxf32>
  linalg.fill {trn.op = 0} ins(%zero : f32) outs(%t : memref<MxNxf32>)
  linalg.matmul {trn.op = 0} ins(%x, %w : memref<MxKxf32>, memref<KxNxf32>) outs(%t : memref<MxNxf32>)
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"], trn.op = 1}
      ins(%t, %bias : memref<MxNxf32>, memref<Nxf32>) outs(%out : memref<MxNxf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    %c05 = arith.constant 0.5 : f32
    %c1 = arith.constant 1.0 : f32
    %k = arith.constant 0.7978845608 : f32
    %k2 = arith.constant 0.044715 : f32
    %x2 = arith.mulf %s, %s : f32
    %x3 = arith.mulf %x2, %s : f32
    %i = arith.mulf %x3, %k2 : f32
    %j = arith.addf %s, %i : f32
    %u = arith.mulf %j, %k : f32
    %th = math.tanh %u : f32
    %p = arith.addf %th, %c1 : f32
    %h = arith.mulf %s, %c05 : f32
    %g = arith.mulf %h, %p : f32
    linalg.yield %g : f32
  }
  return
}
)",
                                               {{"MxK", absl::StrCat(M, "x", K)},
                                                {"KxN", absl::StrCat(K, "x", N)},
                                                {"MxN", absl::StrCat(M, "x", N)},
                                                {"Nxf32", absl::StrCat(N, "xf32")}});
  std::vector<Arg> args = {{nc::DType::kF32, Random(M * K, 1)},
                           {nc::DType::kF32, Random(K * N, 2, 0.1f)},
                           {nc::DType::kF32, Random(N, 3)},
                           {nc::DType::kF32, std::vector<float>(M * N, -7.0f)}};
  std::vector<float> want(M * N);
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += static_cast<double>(args[0].values[m * K + k]) * args[1].values[k * N + n];
      s += args[2].values[n];
      want[m * N + n] = static_cast<float>(0.5 * s * (1 + std::tanh(0.7978845608 * (s + 0.044715 * s * s * s))));
    }
  }
  Result r = Run(mlir, args);
  CHECK(MaxRelError(args[3].values, want) < 1e-5);
  // Every recorded op reaches the device: instructions carry op 0 (matmul) and 1 (epilogue).
  bool saw[2] = {false, false};
  for (const auto& q : r.stream.queues) {
    for (const nc::Instruction& in : q) {
      REQUIRE(in.source_op < 2);
      saw[in.source_op] = true;
    }
  }
  CHECK(saw[0]);
  CHECK(saw[1]);
  CHECK(r.report.matmul_flops == 2LL * M * K * N);
  // Engines overlap: the run is shorter than the engines' summed busy time.
  double busy = 0;
  for (const auto& e : r.report.engines) busy += e.busy_ns;
  CHECK(r.report.modeled_ns < 0.9 * busy);
}

TEST_CASE("bf16 matmul accumulating into C, transposed and batched operands", "[trn][lowering]") {
  SECTION("C += A * B with bf16 inputs, fp32 PSUM, bf16 result") {
    const int M = 130, K = 260, N = 520;
    const std::string mlir = absl::StrCat(
        "func.func @group(%a: memref<", M, "x", K, "xbf16>, %b: memref<", K, "x", N, "xbf16>, %c: memref<", M, "x", N,
        "xbf16>) {\n  linalg.matmul ins(%a, %b : memref<", M, "x", K, "xbf16>, memref<", K, "x", N,
        "xbf16>) outs(%c : memref<", M, "x", N, "xbf16>)\n  return\n}\n");
    std::vector<Arg> args = {{nc::DType::kBF16, Random(M * K, 4)}, {nc::DType::kBF16, Random(K * N, 5)},
                             {nc::DType::kBF16, Random(M * N, 6)}};
    for (Arg& a : args) {
      for (float& v : a.values) v = RoundBf16(v);
    }
    std::vector<float> want(M * N);
    for (int m = 0; m < M; ++m) {
      for (int n = 0; n < N; ++n) {
        float s = 0;
        for (int k = 0; k < K; ++k) s += args[0].values[m * K + k] * args[1].values[k * N + n];
        want[m * N + n] = RoundBf16(s + args[2].values[m * N + n]);
      }
    }
    Run(mlir, args);
    CHECK(MaxRelError(args[2].values, want) < 1.6e-2);  // a few bf16 ulps (fp32 summation order differs)
  }
  SECTION("A read through a transposed layout; batch_matmul") {
    const std::string mlir = R"(
func.func @group(%a: memref<3x40x70xf32, strided<[2800, 1, 40]>>, %b: memref<3x70x50xf32>, %c: memref<3x40x50xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<3x40x50xf32>)
  linalg.batch_matmul ins(%a, %b : memref<3x40x70xf32, strided<[2800, 1, 40]>>, memref<3x70x50xf32>) outs(%c : memref<3x40x50xf32>)
  return
}
)";
    std::vector<Arg> args = {{nc::DType::kF32, Random(3 * 2800, 7)}, {nc::DType::kF32, Random(3 * 70 * 50, 8)},
                             {nc::DType::kF32, std::vector<float>(3 * 40 * 50, 9.0f)}};
    std::vector<float> want(3 * 40 * 50);
    for (int b = 0; b < 3; ++b) {
      for (int m = 0; m < 40; ++m) {
        for (int n = 0; n < 50; ++n) {
          double s = 0;
          for (int k = 0; k < 70; ++k) s += static_cast<double>(args[0].values[b * 2800 + m + k * 40]) * args[1].values[b * 3500 + k * 50 + n];
          want[b * 2000 + m * 50 + n] = static_cast<float>(s);
        }
      }
    }
    Run(mlir, args);
    CHECK(MaxRelError(args[2].values, want) < 1e-5);
  }
}

TEST_CASE("bf16 elementwise: DMA widens to f32 tiles, stores round to nearest even", "[trn][lowering]") {
  // z = round(round(x + y) * 3): the inner rounding is a copy into a bf16 tile, the outer one the
  // store's DMA. Ties go to the even neighbour; NaN stays NaN. DMA moves 2 bytes an element.
  const std::string mlir = R"(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @group(%x: memref<128x16xbf16>, %y: memref<128x16xbf16>, %z: memref<128x16xbf16>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<128x16xbf16>, memref<128x16xbf16>) outs(%z : memref<128x16xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %s = arith.addf %af, %bf : f32
    %sr = arith.truncf %s : f32 to bf16
    %sw = arith.extf %sr : bf16 to f32
    %three = arith.constant 3.0 : f32
    %m = arith.mulf %sw, %three : f32
    %r = arith.truncf %m : f32 to bf16
    linalg.yield %r : bf16
  }
  return
}
)";
  std::vector<Arg> args = {{nc::DType::kBF16, Random(128 * 16, 21)}, {nc::DType::kBF16, Random(128 * 16, 22, 0.01f)},
                           {nc::DType::kBF16, std::vector<float>(128 * 16, 0.0f)}};
  for (int i = 0; i < 2; ++i) {
    for (float& v : args[i].values) v = RoundBf16(v);
  }
  // Ties of the sum: 1 + 2^-8 -> 1 (even), (1 + 2^-7) + 2^-8 -> 1 + 2^-6 (even); NaN.
  args[0].values[0] = 1.0f, args[1].values[0] = 0.00390625f;
  args[0].values[1] = 1.0078125f, args[1].values[1] = 0.00390625f;
  args[0].values[2] = std::nanf("");
  std::vector<float> want(128 * 16);
  for (size_t i = 0; i < want.size(); ++i) want[i] = RoundBf16(RoundBf16(args[0].values[i] + args[1].values[i]) * 3.0f);
  Result r = Run(mlir, args);
  CHECK(args[2].values[0] == 3.0f);
  CHECK(args[2].values[1] == RoundBf16(1.015625f * 3.0f));
  CHECK(std::isnan(args[2].values[2]));
  for (size_t i = 3; i < want.size(); ++i) {
    INFO(i);
    REQUIRE(args[2].values[i] == want[i]);
  }
  CHECK(r.report.dma_bytes == 3 * 128 * 16 * 2);
}

TEST_CASE("elementwise: broadcasts, constants on either side, comparisons, casts", "[trn][lowering]") {
  const std::string mlir = R"(
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#col = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
func.func @group(%x: memref<5x300x7xf32>, %y: memref<5x1x7xf32>, %o1: memref<5x300x7xbf16>, %o2: memref<5x300x7xi1>) {
  linalg.generic {indexing_maps = [#id, #col, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %y : memref<5x300x7xf32>, memref<5x1x7xf32>) outs(%o1, %o2 : memref<5x300x7xbf16>, memref<5x300x7xi1>) {
  ^bb0(%a: f32, %b: f32, %u: bf16, %v: i1):
    %c2 = arith.constant 2.0 : f32
    %c3 = arith.constant 3.0 : f32
    %d = arith.subf %c2, %a : f32
    %q = arith.divf %c3, %d : f32
    %m = arith.maximumf_or_maxf %q, %b : f32
    %n = arith.negf %m : f32
    %ab = math.absf %n : f32
    %e = math.exp %b : f32
    %r = arith.addf %ab, %e : f32
    %t = arith.truncf %r : f32 to bf16
    %cmp = arith.cmpf olt, %c2, %a : f32
    linalg.yield %t, %cmp : bf16, i1
  }
  return
}
)";
  std::vector<Arg> args = {{nc::DType::kF32, Random(5 * 300 * 7, 10, 4.0f)}, {nc::DType::kF32, Random(35, 11)},
                           {nc::DType::kBF16, std::vector<float>(5 * 300 * 7, 0.0f)},
                           {nc::DType::kU8, std::vector<float>(5 * 300 * 7, 0.0f)}};
  std::vector<float> want1(5 * 300 * 7), want2(5 * 300 * 7);
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 300; ++j) {
      for (int k = 0; k < 7; ++k) {
        const float a = args[0].values[(i * 300 + j) * 7 + k], b = args[1].values[i * 7 + k];
        const float q = 3.0f / (2.0f - a);
        want1[(i * 300 + j) * 7 + k] = RoundBf16(std::abs(-std::max(q, b)) + std::exp(b));
        want2[(i * 300 + j) * 7 + k] = 2.0f < a ? 1.0f : 0.0f;
      }
    }
  }
  const std::string text = absl::StrReplaceAll(mlir, {{"arith.maximumf_or_maxf", "arith.maxf"}});
  Run(text, args);
  CHECK(MaxRelError(args[2].values, want1) < 1e-2);
  CHECK(args[3].values == want2);
}

TEST_CASE("reductions: rows, columns and a chunked full sum", "[trn][lowering]") {
  const std::string mlir = R"(
#in = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
#all = affine_map<(d0) -> (d0)>
#none = affine_map<(d0) -> ()>
func.func @group(%x: memref<300x5000xf32>, %rowsum: memref<300xf32>, %colmax: memref<5000xf32>, %v: memref<70001xf32>, %total: memref<f32>) {
  linalg.generic {indexing_maps = [#in, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<300x5000xf32>) outs(%rowsum : memref<300xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#tr, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<300x5000xf32>) outs(%colmax : memref<5000xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maxf %acc, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction"]}
      ins(%v : memref<70001xf32>) outs(%total : memref<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }
  return
}
)";
  std::vector<Arg> args = {{nc::DType::kF32, Random(300 * 5000, 12)},
                           {nc::DType::kF32, std::vector<float>(300, 1.0f)},
                           {nc::DType::kF32, std::vector<float>(5000, -INFINITY)},
                           {nc::DType::kF32, Random(70001, 13)},
                           {nc::DType::kF32, {0.5f}}};
  std::vector<float> rows(300, 1.0f), cols(5000, -INFINITY);
  double total = 0.5;
  for (int i = 0; i < 300; ++i) {
    double s = 0;
    for (int j = 0; j < 5000; ++j) {
      const float a = args[0].values[i * 5000 + j];
      s += static_cast<double>(a) * a;
      cols[j] = std::max(cols[j], a);
    }
    rows[i] += static_cast<float>(s);
  }
  for (float v : args[3].values) total += v;
  Run(mlir, args);
  CHECK(MaxRelError(args[1].values, rows) < 1e-5);
  CHECK(args[2].values == cols);
  CHECK(std::abs(args[4].values[0] - total) < 1e-3);
}

TEST_CASE("what the trn pipeline refuses, it names", "[trn][lowering]") {
  CHECK_THAT(Compile(R"(
func.func @group(%x: memref<8xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %e = math.atan %a : f32
    linalg.yield %e : f32
  }
  return
}
)"),
             Catch::Contains("math.atan") && Catch::Contains("no trn lowering"));
  CHECK_THAT(Compile(R"(
func.func @group(%ctx: i64, %x: memref<8xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> (0)>, affine_map<() -> (0)>], iterator_types = [], library_call = "trn_ext1_0"}
      ins(%ctx, %x : i64, memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%c: i64, %a: f32, %b: f32):
    linalg.yield %b : f32
  }
  return
}
)"),
             Catch::Contains("runtime call") && Catch::Contains("trn_ext1_0"));
  CHECK_THAT(Compile(R"(
func.func @group(%x: memref<8xf64>, %y: memref<8xf64>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf64>) outs(%y : memref<8xf64>) {
  ^bb0(%a: f64, %b: f64):
    linalg.yield %a : f64
  }
  return
}
)"),
             Catch::Contains("f64") && Catch::Contains("no trn lowering"));
  CHECK_THAT(Compile(R"(
func.func @group(%x: memref<8xi64>, %y: memref<8xi64>) {
  linalg.copy ins(%x : memref<8xi64>) outs(%y : memref<8xi64>)
  return
}
)"),
             Catch::Contains("linalg.copy") && Catch::Contains("no trn lowering"));
  CHECK_THAT(Compile("func.func @group() { return }", "trn9"), Catch::Contains("trn9"));
}

TEST_CASE("1024^3 bf16 matmul keeps TensorE busy: DMA overlaps compute", "[trn][lowering]") {
  const std::string mlir = R"(
func.func @group(%a: memref<1024x1024xbf16>, %b: memref<1024x1024xbf16>, %c: memref<1024x1024xbf16>) {
  %zero = arith.constant 0.0 : bf16
  linalg.fill ins(%zero : bf16) outs(%c : memref<1024x1024xbf16>)
  linalg.matmul ins(%a, %b : memref<1024x1024xbf16>, memref<1024x1024xbf16>) outs(%c : memref<1024x1024xbf16>)
  return
}
)";
  absl::StatusOr<nc::InstructionStream> stream = trn::ir::CompileToStream(mlir, "trn2");
  REQUIRE(stream.ok());
  std::vector<std::vector<uint8_t>> memory(3, std::vector<uint8_t>(1024 * 1024 * 2));
  std::vector<nc::HostBinding> bindings;
  for (auto& m : memory) bindings.push_back({m.data(), static_cast<int64_t>(m.size())});
  nc::RunOptions timing;
  timing.functional = false;
  absl::StatusOr<nc::RunReport> r = nc::Run(*stream, *nc::TargetByName("trn2"), bindings, timing);
  REQUIRE(r.ok());
  const double tensor = r->engines[static_cast<int>(nc::Engine::kTensor)].busy_ns;
  const double dma = r->engines[static_cast<int>(nc::Engine::kDma)].busy_ns;
  // Serialised, the run would take tensor + dma; overlapped, little more than the TensorE time.
  CHECK(r->modeled_ns < 0.75 * (tensor + dma));
  CHECK(r->modeled_ns < 1.25 * tensor);
}

TEST_CASE("select is exact with inf and NaN; NaN-aware comparisons and max", "[trn][lowering]") {
  // relu backward (select(x > 0, g, 0)) with infinite gradients, a -inf masked fill, the NaN
  // predicates, and torch's NaN-propagating max reduction, as the group lowering spells them.
  const std::string mlir = R"(
#id = affine_map<(d0, d1) -> (d0, d1)>
#rows = affine_map<(d0, d1) -> (d0)>
func.func @group(%x: memref<4x6xf32>, %g: memref<4x6xf32>, %o1: memref<4x6xf32>, %o2: memref<4x6xf32>, %une: memref<4x6xi1>, %uno: memref<4x6xi1>, %ogt: memref<4x6xi1>, %mx: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id, #id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %g : memref<4x6xf32>, memref<4x6xf32>) outs(%o1, %o2, %une, %uno, %ogt : memref<4x6xf32>, memref<4x6xf32>, memref<4x6xi1>, memref<4x6xi1>, memref<4x6xi1>) {
  ^bb0(%a: f32, %b: f32, %u: f32, %v: f32, %w: i1, %y: i1, %z: i1):
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %pos = arith.cmpf ogt, %a, %zero : f32
    %r = arith.select %pos, %b, %zero : f32
    %m = arith.select %pos, %ninf, %a : f32
    %c1 = arith.cmpf une, %a, %b : f32
    %c2 = arith.cmpf uno, %a, %b : f32
    %c3 = arith.cmpf ogt, %a, %b : f32
    linalg.yield %r, %m, %c1, %c2, %c3 : f32, f32, i1, i1, i1
  }
  %init = arith.constant 0xFF800000 : f32
  linalg.fill ins(%init : f32) outs(%mx : memref<4xf32>)
  linalg.generic {indexing_maps = [#id, #rows], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x6xf32>) outs(%mx : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %gt = arith.cmpf ogt, %acc, %a : f32
    %s = arith.select %gt, %acc, %a : f32
    %nan = arith.cmpf uno, %acc, %acc : f32
    %t = arith.select %nan, %acc, %s : f32
    linalg.yield %t : f32
  }
  return
}
)";
  const float inf = INFINITY, nan = NAN;
  std::vector<float> x = {1, -1, 0, 2, -3, nan, 5, 4, -2, 0.5f, -0.5f, 3, -1, -2, -3, -4, -5, -6, 9, nan, 1, 2, 3, 4};
  std::vector<float> g = {inf, inf, -inf, 7, nan, 1, 2, 4, 6, 0.5f, 8, -inf, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::vector<Arg> args = {{nc::DType::kF32, x}, {nc::DType::kF32, g}, {nc::DType::kF32, std::vector<float>(24)},
                           {nc::DType::kF32, std::vector<float>(24)}, {nc::DType::kU8, std::vector<float>(24)},
                           {nc::DType::kU8, std::vector<float>(24)}, {nc::DType::kU8, std::vector<float>(24)},
                           {nc::DType::kF32, std::vector<float>(4)}};
  Run(mlir, args);
  for (int i = 0; i < 24; ++i) {
    INFO("element " << i << ": x = " << x[i] << ", g = " << g[i]);
    const bool pos = x[i] > 0;
    const float r = pos ? g[i] : 0.0f, m = pos ? -inf : x[i];
    CHECK((std::isnan(r) ? std::isnan(args[2].values[i]) : args[2].values[i] == r));
    CHECK((std::isnan(m) ? std::isnan(args[3].values[i]) : args[3].values[i] == m));
    CHECK(args[4].values[i] == (x[i] != g[i] ? 1.0f : 0.0f));
    CHECK(args[5].values[i] == (std::isnan(x[i]) || std::isnan(g[i]) ? 1.0f : 0.0f));
    CHECK(args[6].values[i] == (x[i] > g[i] ? 1.0f : 0.0f));
  }
  // Row maxima (rows 0 and 3 hold a NaN: which value the VectorE max gives for NaN is not public,
  // so only the NaN-free rows are compared).
  CHECK(args[7].values[1] == 5.0f);
  CHECK(args[7].values[2] == -1.0f);
}

TEST_CASE("runtime scalars: loaded once per tile as a column, f64 passed as f32", "[trn][lowering]") {
  // Adam-like update: p - lr * m / (sqrt(v) + eps), lr and eps runtime scalars (f64 params).
  const std::string mlir = R"(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @group(%ctx: i64, %params: memref<?xf64>, %p: memref<300x40xf32>, %m: memref<300x40xf32>, %v: memref<300x40xf32>, %out: memref<300x40xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %lr64 = memref.load %params[%c0] : memref<?xf64>
  %eps64 = memref.load %params[%c1] : memref<?xf64>
  linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %m, %v : memref<300x40xf32>, memref<300x40xf32>, memref<300x40xf32>) outs(%out : memref<300x40xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %lr = arith.truncf %lr64 : f64 to f32
    %eps = arith.truncf %eps64 : f64 to f32
    %s = math.sqrt %c : f32
    %d = arith.addf %s, %eps : f32
    %q = arith.divf %b, %d : f32
    %u = arith.mulf %lr, %q : f32
    %r = arith.subf %a, %u : f32
    linalg.yield %r : f32
  }
  return
}
)";
  const int n = 300 * 40;
  std::vector<float> v = Random(n, 21);
  for (float& x : v) x = std::abs(x);
  std::vector<Arg> args = {{nc::DType::kF32, {}}, {nc::DType::kF32, {0.01f, 1e-3f}}, {nc::DType::kF32, Random(n, 22)},
                           {nc::DType::kF32, Random(n, 23)}, {nc::DType::kF32, v}, {nc::DType::kF32, std::vector<float>(n)}};
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) {
    want[i] = args[2].values[i] - 0.01f * (args[3].values[i] / (std::sqrt(v[i]) + 1e-3f));
  }
  Run(mlir, args);
  CHECK(MaxRelError(args[5].values, want) < 1e-6);
}

TEST_CASE("erf GELU as the group lowering writes it", "[trn][lowering]") {
  const std::string mlir = R"(
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @group(%x: memref<16x64xf32>, %y: memref<16x64xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x64xf32>) outs(%y : memref<16x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %k = arith.constant 0x3F3504F3 : f32
    %s = arith.mulf %a, %k : f32
    %e = math.erf %s : f32
    %one = arith.constant 1.0 : f32
    %p = arith.addf %one, %e : f32
    %half = arith.constant 0.5 : f32
    %h = arith.mulf %a, %half : f32
    %g = arith.mulf %h, %p : f32
    linalg.yield %g : f32
  }
  return
}
)";
  std::vector<Arg> args = {{nc::DType::kF32, Random(1024, 31, 4.0f)}, {nc::DType::kF32, std::vector<float>(1024)}};
  std::vector<float> want(1024);
  for (int i = 0; i < 1024; ++i) {
    const double a = args[0].values[i];
    want[i] = static_cast<float>(0.5 * a * (1 + std::erf(a / std::sqrt(2.0))));
  }
  Run(mlir, args);
  CHECK(MaxRelError(args[1].values, want) < 1e-6);
}

TEST_CASE("the emitter refuses instructions on engines that cannot run them", "[trn][lowering]") {
  // Already-lowered trn ops keep their engine through the pipeline (assign-engines fills only
  // missing ones); the emitter checks the placement.
  const std::string psum_on_gpsimd = R"(
func.func @group(%x: memref<8x16xf32>) {
  %p = trn.alloc : !trn.psum<8, [16], f32>
  %s = trn.alloc : !trn.sbuf<8, [16], f32>
  trn.tensor_copy %p, %s {engine = "gpsimd", trn.op = 4 : i64} : !trn.psum<8, [16], f32>, !trn.sbuf<8, [16], f32>
  return
}
)";
  CHECK_THAT(Compile(psum_on_gpsimd), Catch::Contains("tensor_copy (op 4) on gpsimd touches PSUM"));
  const std::string activation_on_vector = R"(
func.func @group(%x: memref<8x16xf32>) {
  %a = trn.alloc : !trn.sbuf<8, [16], f32>
  %b = trn.alloc : !trn.sbuf<8, [16], f32>
  trn.activation %a, %b {engine = "vector", func = "exp", trn.op = 2 : i64} : !trn.sbuf<8, [16], f32>, !trn.sbuf<8, [16], f32>
  return
}
)";
  CHECK_THAT(Compile(activation_on_vector), Catch::Contains("activation (op 2) cannot run on vector"));
  const std::string divide_on_scalar = R"(
func.func @group(%x: memref<8x16xf32>) {
  %a = trn.alloc : !trn.sbuf<8, [16], f32>
  %b = trn.alloc : !trn.sbuf<8, [16], f32>
  trn.tensor_scalar %a, %b {engine = "scalar", op = "divide", imm = 2.0 : f32} : !trn.sbuf<8, [16], f32>, !trn.sbuf<8, [16], f32>
  return
}
)";
  CHECK_THAT(Compile(divide_on_scalar), Catch::Contains("tensor_scalar (op 0) cannot run on scalar"));
}

TEST_CASE("modeled matmul time scales with the work once TensorE-bound", "[trn][lowering]") {
  auto modeled = [](int n) {
    const std::string mlir = absl::StrCat(
        "func.func @group(%a: memref<1024x1024xbf16>, %b: memref<1024x", n, "xbf16>, %c: memref<1024x", n,
        "xbf16>) {\n  %z = arith.constant 0.0 : bf16\n  linalg.fill ins(%z : bf16) outs(%c : memref<1024x", n,
        "xbf16>)\n  linalg.matmul ins(%a, %b : memref<1024x1024xbf16>, memref<1024x", n, "xbf16>) outs(%c : memref<1024x",
        n, "xbf16>)\n  return\n}\n");
    absl::StatusOr<nc::InstructionStream> stream = trn::ir::CompileToStream(mlir, "trn2");
    REQUIRE(stream.ok());
    std::vector<std::vector<uint8_t>> memory = {std::vector<uint8_t>(1024 * 1024 * 2),
                                                std::vector<uint8_t>(1024 * n * 2), std::vector<uint8_t>(1024 * n * 2)};
    std::vector<nc::HostBinding> bindings;
    for (auto& m : memory) bindings.push_back({m.data(), static_cast<int64_t>(m.size())});
    nc::RunOptions timing;
    timing.functional = false;
    absl::StatusOr<nc::RunReport> r = nc::Run(*stream, *nc::TargetByName("trn2"), bindings, timing);
    REQUIRE(r.ok());
    return r->modeled_ns;
  };
  const double t1 = modeled(2048), t2 = modeled(4096);
  CHECK(t2 / t1 > 1.8);
  CHECK(t2 / t1 < 2.2);
}
