// trn-run: compile a linalg-on-memrefs module for a trn target and run it on the NeuronCore
// model with deterministic pseudo-random arguments; prints the modeled report as JSON.
//   trn-run FILE.mlir [--target trn2|trn3] [--timing-only] [--stream OUT.trnstream] [--print-trn]
// --timing-only charges time without computing values (for large benchmarks); --repeat N runs
// N times and times the last run (the model's speed without first-run costs).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "mlir_lowering/trn/TrnEmit.h"
#include "runtime/neuroncore/model.h"
#include "runtime/neuroncore/target.h"

namespace nc = trn::runtime::neuroncore;

namespace {

int Usage() {
  std::fprintf(stderr, "usage: trn-run FILE.mlir [--target trn2|trn3] [--timing-only] [--repeat N] [--stream OUT] [--print-trn]\n");
  return 2;
}

void Fill(std::vector<uint8_t>& bytes, nc::DType t, uint64_t seed) {
  const int esize = nc::DTypeBytes(t);
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i + esize <= bytes.size(); i += esize) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const float v = static_cast<float>(static_cast<int64_t>(x % 2001) - 1000) / 1000.0f;
    if (t == nc::DType::kF32) {
      std::memcpy(&bytes[i], &v, 4);
    } else if (t == nc::DType::kBF16) {
      uint32_t u;
      std::memcpy(&u, &v, 4);
      const uint16_t h = static_cast<uint16_t>(u >> 16);  // exact for these values' top bits
      std::memcpy(&bytes[i], &h, 2);
    } else {
      bytes[i] = static_cast<uint8_t>(x & 1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string file, target = "trn2", stream_out;
  bool timing_only = false, print_trn = false;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--target" && i + 1 < argc) target = argv[++i];
    else if (a == "--stream" && i + 1 < argc) stream_out = argv[++i];
    else if (a == "--timing-only") timing_only = true;
    else if (a == "--print-trn") print_trn = true;
    else if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (!a.empty() && a[0] == '-') return Usage();
    else file = a;
  }
  if (file.empty()) return Usage();
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "trn-run: cannot read %s\n", file.c_str());
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  const auto t0 = std::chrono::steady_clock::now();
  std::string trn_text;
  absl::StatusOr<nc::InstructionStream> stream = trn::ir::CompileToStream(text.str(), target, &trn_text);
  const auto t1 = std::chrono::steady_clock::now();
  if (!stream.ok()) {
    std::fprintf(stderr, "trn-run: %s\n", std::string(stream.status().message()).c_str());
    return 1;
  }
  if (print_trn) std::cout << trn_text << "\n";
  if (!stream_out.empty()) {
    std::ofstream out(stream_out, std::ios::binary);
    out << nc::Encode(*stream);
  }
  std::vector<std::vector<uint8_t>> memory;
  std::vector<nc::HostBinding> bindings;
  for (const nc::Buffer& b : stream->buffers) {
    if (b.space != nc::Space::kHbm || b.binding < 0) continue;
    if (static_cast<size_t>(b.binding) >= memory.size()) memory.resize(b.binding + 1);
    std::vector<uint8_t>& m = memory[b.binding];
    if (m.size() < b.bytes_per_partition) {
      m.resize(b.bytes_per_partition);
      if (!timing_only) Fill(m, b.dtype, static_cast<uint64_t>(b.binding) + 1);
    }
  }
  for (std::vector<uint8_t>& m : memory) bindings.push_back({m.data(), static_cast<int64_t>(m.size())});
  std::optional<nc::TargetSpec> spec = nc::TargetByName(target);
  nc::RunOptions options;
  options.functional = !timing_only;
  // --repeat: the last run is timed (the first pays for the process's on-chip memory).
  for (int i = 1; i < repeat; ++i) (void)nc::Run(*stream, *spec, bindings, options);
  const auto t2 = std::chrono::steady_clock::now();
  absl::StatusOr<nc::RunReport> report = nc::Run(*stream, *spec, bindings, options);
  const auto t3 = std::chrono::steady_clock::now();
  if (!report.ok()) {
    std::fprintf(stderr, "trn-run: model: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  int64_t instructions = 0;
  std::ostringstream engines;
  for (int e = 0; e < nc::kEngines; ++e) {
    const nc::EngineReport& r = report->engines[e];
    instructions += static_cast<int64_t>(stream->queues[e].size());
    engines << (e ? ", " : "") << "\"" << nc::EngineName(static_cast<nc::Engine>(e)) << "\": {\"busy_ns\": " << r.busy_ns
            << ", \"instructions\": " << r.instructions
            << ", \"utilisation\": " << report->Utilisation(static_cast<nc::Engine>(e)) << "}";
  }
  const double model_s = std::chrono::duration<double>(t3 - t2).count();
  const double tflops = report->modeled_ns > 0 ? static_cast<double>(report->matmul_flops) / report->modeled_ns / 1e3 : 0;
  std::printf(
      "{\"target\": \"%s\", \"modeled_ns\": %.1f, \"matmul_flops\": %lld, \"tflops\": %.3f, \"peak_bf16_tflops\": %.2f, "
      "\"dma_bytes\": %lld, \"instructions\": %lld, \"compile_s\": %.4f, \"model_s\": %.7f, \"functional\": %s, "
      "\"engines\": {%s}}\n",
      target.c_str(), report->modeled_ns, static_cast<long long>(report->matmul_flops), tflops, spec->peak_bf16_tflops,
      static_cast<long long>(report->dma_bytes), static_cast<long long>(instructions),
      std::chrono::duration<double>(t1 - t0).count(), model_s, timing_only ? "false" : "true", engines.str().c_str());
  return 0;
}
