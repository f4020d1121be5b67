// trn_mlir host JIT: self-test, error reporting, object round trip, opt levels, concurrency.
#include "mlir_lowering/host_jit.h"
#include "mlir_lowering/object_check.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

namespace {

using trn::mlir_lowering::CheckObject;
using trn::mlir_lowering::CompileToObject;
using trn::mlir_lowering::LoadObject;
using trn::mlir_lowering::ObjectCode;
using Memref1D = StridedMemRefType<float, 1>;

// out = exp(a) * 2 - a, reduced from two ops; also exercises math -> LLVM intrinsics and a
// returned value whose producer is fused.
constexpr const char* kScaleModule = R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func @scale(%a: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %two = arith.constant 2.0 : f32
  %n = tensor.dim %a, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%v: f32, %o: f32):
    %t = math.exp %v : f32
    %m = arith.mulf %t, %two : f32
    linalg.yield %m : f32
  } -> tensor<?xf32>
  %e2 = tensor.empty(%n) : tensor<?xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %a : tensor<?xf32>, tensor<?xf32>) outs(%e2 : tensor<?xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.subf %v, %w : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %y : tensor<?xf32>
}
)mlir";

Memref1D Describe(std::vector<float>& data) {
  return Memref1D{data.data(), data.data(), 0, {static_cast<int64_t>(data.size())}, {1}};
}

// Runs @scale through `entry` on 257 values (not a multiple of any vector width) and checks
// against std::exp with a relative tolerance (LLVM may use a different exp implementation).
void CheckScale(void* entry) {
  std::vector<float> in(257), out(257, std::nanf(""));
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = static_cast<float>(i) / 64.0f - 2.0f;
  }
  Memref1D din = Describe(in), dout = Describe(out);
  reinterpret_cast<void (*)(Memref1D*, Memref1D*)>(entry)(&din, &dout);
  for (size_t i = 0; i < in.size(); ++i) {
    const float expected = std::exp(in[i]) * 2.0f - in[i];
    REQUIRE(out[i] == Approx(expected).epsilon(1e-5));
  }
}

}  // namespace

TEST_CASE("self-test compiles at O0 and O3 and matches the C++ reference", "[mlir]") {
  auto result = trn::mlir_lowering::RunSelfTest();
  REQUIRE(result.ok());
  CHECK(result->results_match);
  CHECK(result->compile_ms_o0 > 0);
  CHECK(result->compile_ms_o3 > 0);
  CHECK(result->load_ms > 0);
  WARN("O0 " << result->compile_ms_o0 << " ms, O3 " << result->compile_ms_o3 << " ms, load "
             << result->load_ms << " ms");
}

TEST_CASE("a malformed module is an InvalidArgument carrying the parse error", "[mlir]") {
  constexpr const char* kBad = R"mlir(
func.func @bad(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.nosuchop %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)mlir";
  auto code = CompileToObject(kBad, "bad", 0);
  REQUIRE_FALSE(code.ok());
  CHECK(code.status().code() == absl::StatusCode::kInvalidArgument);
  const std::string message(code.status().message());
  CHECK_THAT(message, Catch::Contains("parsing the MLIR module for @bad"));
  CHECK_THAT(message, Catch::Contains("custom op 'arith.nosuchop' is unknown"));
  CHECK_THAT(message, Catch::Contains("3:8"));  // line:column of the bad op
}

TEST_CASE("a missing function and a bad opt level are reported", "[mlir]") {
  auto missing = CompileToObject(kScaleModule, "nosuchfunc", 0);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("@nosuchfunc"));

  auto bad_level = CompileToObject(kScaleModule, "scale", 4);
  REQUIRE_FALSE(bad_level.ok());
  CHECK(bad_level.status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("verifying after every pass or once at the end builds the same object", "[mlir]") {
  for (int opt_level : {0, 3}) {
    INFO("opt level " << opt_level);
    auto once = CompileToObject(kScaleModule, "scale", opt_level, nullptr, -1, /*verify_each_pass=*/false);
    auto each = CompileToObject(kScaleModule, "scale", opt_level, nullptr, -1, /*verify_each_pass=*/true);
    REQUIRE(once.ok());
    REQUIRE(each.ok());
    CHECK(once->bytes == each->bytes);
  }
}

// Functions the object defines (name -> is a global symbol).
std::map<std::string, bool> DefinedFunctions(const ObjectCode& code) {
  auto object = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(code.bytes.data(), code.bytes.size()), "group.o"));
  REQUIRE(static_cast<bool>(object));
  std::map<std::string, bool> defined;
  for (const llvm::object::SymbolRef& symbol : (*object)->symbols()) {
    auto name = symbol.getName();
    auto flags = symbol.getFlags();
    auto type = symbol.getType();
    REQUIRE(static_cast<bool>(name));
    REQUIRE(static_cast<bool>(flags));
    REQUIRE(static_cast<bool>(type));
    if (*type != llvm::object::SymbolRef::ST_Function || (*flags & llvm::object::SymbolRef::SF_Undefined)) continue;
    defined[name->str()] = (*flags & llvm::object::SymbolRef::SF_Global) != 0;
  }
  return defined;
}

TEST_CASE("the body is inlined into its C interface: one function, no call with unpacked descriptors", "[mlir]") {
  for (int opt_level : {0, 1, 3}) {
    INFO("opt level " << opt_level);
    auto code = CompileToObject(kScaleModule, "scale", opt_level);
    REQUIRE(code.ok());
    const std::map<std::string, bool> defined = DefinedFunctions(*code);
    REQUIRE(defined.count("_mlir_ciface_scale") == 1);
    CHECK(defined.at("_mlir_ciface_scale"));
    CHECK(defined.count("scale") == 0);  // inlined and deleted
    auto loaded = LoadObject(*code);
    REQUIRE(loaded.ok());
    CheckScale((*loaded)->entry());
  }
}

TEST_CASE("object bytes round-trip: compile once, load twice, both run", "[mlir]") {
  auto code = CompileToObject(kScaleModule, "scale", 2);
  REQUIRE(code.ok());
  CHECK(code->entry_symbol == "_mlir_ciface_scale");
  CHECK(code->opt_level == 2);
  REQUIRE(code->bytes.size() > 4);
  CHECK(code->bytes.compare(0, 4, "\x7f"
                                  "ELF") == 0);

  const ObjectCode copy = *code;  // as a cache would hand back stored bytes
  auto first = LoadObject(*code);
  auto second = LoadObject(copy);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK((*first)->entry() != (*second)->entry());
  CheckScale((*first)->entry());
  first->reset();  // unloading one must not affect the other
  CheckScale((*second)->entry());
}

TEST_CASE("O0 and O3 objects both compute the right result", "[mlir]") {
  for (int opt_level : {0, 3}) {
    INFO("opt level " << opt_level);
    auto code = CompileToObject(kScaleModule, "scale", opt_level);
    REQUIRE(code.ok());
    auto loaded = LoadObject(*code);
    REQUIRE(loaded.ok());
    CheckScale((*loaded)->entry());
  }
}

TEST_CASE("corrupt object bytes fail to load with a status", "[mlir]") {
  ObjectCode junk{"not an object file", "_mlir_ciface_scale", 0};
  auto loaded = LoadObject(junk);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().code() == absl::StatusCode::kInvalidArgument);  // refused before linking
  CHECK(loaded.status().message().find("malformed object") != std::string_view::npos);
}

// CheckObject runs no linker, so corruptions that aborted RuntimeDyld are safe to try in-process
// (tests/python/test_cache_object_check.py links them in subprocesses, through the disk tier).
TEST_CASE("CheckObject accepts compiled objects and refuses malformed ones", "[mlir]") {
  auto code = CompileToObject(kScaleModule, "scale", 1);
  REQUIRE(code.ok());
  CHECK(CheckObject(code->bytes).ok());
  const std::string& good = code->bytes;
  auto refused = [](const std::string& bytes) {
    absl::Status s = CheckObject(bytes);
    return s.code() == absl::StatusCode::kInvalidArgument &&
           s.message().find("malformed object") != std::string_view::npos;
  };
  CHECK(refused(""));
  CHECK(refused(good.substr(0, good.size() / 2)));
  CHECK(refused(good.substr(0, 40)));
  std::string machine = good;
  machine[18] = static_cast<char>(183);  // e_machine: EM_AARCH64
  machine[19] = 0;
  CHECK(refused(machine));
  std::string shnum = good;
  shnum[60] = static_cast<char>(0xF0);  // e_shnum: far more sections than the file holds
  shnum[61] = static_cast<char>(0xFF);
  CHECK(refused(shnum));
}

TEST_CASE("compilation runs concurrently on two threads", "[mlir]") {
  std::vector<absl::StatusOr<ObjectCode>> codes(2, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < codes.size(); ++i) {
    threads.emplace_back([&codes, i] { codes[i] = CompileToObject(kScaleModule, "scale", 0); });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (auto& code : codes) {
    REQUIRE(code.ok());
    auto loaded = LoadObject(*code);
    REQUIRE(loaded.ok());
    CheckScale((*loaded)->entry());
  }
}

TEST_CASE("a returned input is copied into the out argument", "[mlir]") {
  constexpr const char* kIdentity = R"mlir(
func.func @identity(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}
)mlir";
  auto code = CompileToObject(kIdentity, "identity", 0);
  REQUIRE(code.ok());
  auto loaded = LoadObject(*code);
  REQUIRE(loaded.ok());
  std::vector<float> in{1, 2, 3}, out(3, 0.0f);
  Memref1D din = Describe(in), dout = Describe(out);
  reinterpret_cast<void (*)(Memref1D*, Memref1D*)>((*loaded)->entry())(&din, &dout);
  CHECK(out == in);
}

TEST_CASE("host target key names triple and CPU", "[mlir]") {
  const std::string key = trn::mlir_lowering::HostTargetKey();
  CHECK_THAT(key, Catch::Contains("x86_64"));
  CHECK(key.find(';') != std::string::npos);
}

TEST_CASE("a reduction writes through linalg.fill into the out argument", "[mlir]") {
  constexpr const char* kRowSum = R"mlir(
func.func @rowsum(%a: tensor<?x?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %e = tensor.empty(%m) : tensor<?xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<?x?xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %sum : tensor<?xf32>
}
)mlir";
  auto code = CompileToObject(kRowSum, "rowsum", 3);
  REQUIRE(code.ok());
  auto loaded = LoadObject(*code);
  REQUIRE(loaded.ok());
  std::vector<float> in{1, 2, 3, 4, 5, 6}, out(2, std::nanf(""));
  StridedMemRefType<float, 2> din{in.data(), in.data(), 0, {2, 3}, {3, 1}};
  Memref1D dout = Describe(out);
  reinterpret_cast<void (*)(StridedMemRefType<float, 2>*, Memref1D*)>((*loaded)->entry())(&din,
                                                                                       &dout);
  CHECK(out == std::vector<float>{6, 15});
}
