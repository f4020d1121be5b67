// trn-compile-bench: compiles group modules (files written by NEURON_DUMP_MLIR) for the host
// with CompileToObject and prints where each compile's time goes (parse, MLIR pipeline, LLVM;
// means), then the median, p90, max and min of one compile's total.
// For measuring the compiler alone, without a model run around it (bench/README.md).
//   trn-compile-bench [--level N] [--codegen N] [--repeat K] [--func NAME] [--verify-each]
//                     [--objects DIR] file.mlir...
// --objects DIR writes each file's object code to DIR/<file stem>.o, for readelf/objdump.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mlir_lowering/host_jit.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: trn-compile-bench [--level 0..3] [--codegen -1..3] [--repeat K] [--func NAME] "
               "[--verify-each] [--objects DIR] file.mlir...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int level = 0, codegen = -1, repeat = 1;
  bool verify_each = false;
  std::string func = "group", objects_dir;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--level" && has_value) {
      level = std::atoi(argv[++i]);
    } else if (arg == "--codegen" && has_value) {
      codegen = std::atoi(argv[++i]);
    } else if (arg == "--repeat" && has_value) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--verify-each") {
      verify_each = true;
    } else if (arg == "--func" && has_value) {
      func = argv[++i];
    } else if (arg == "--objects" && has_value) {
      objects_dir = argv[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage();
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) return Usage();
  double parse = 0, pipeline = 0, translate = 0, optimize = 0, codegen_ms = 0;
  size_t object_bytes = 0;
  int compiles = 0;
  std::vector<double> each_ms;  // one compile's total, for the median (the issues' targets are medians)
  for (const std::string& path : files) {
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    for (int r = 0; r < repeat; ++r) {
      trn::mlir_lowering::CompileTimings t;
      auto object = trn::mlir_lowering::CompileToObject(text.str(), func, level, &t, codegen, verify_each);
      if (!object.ok()) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), std::string(object.status().message()).c_str());
        return 1;
      }
      parse += t.parse_ms;
      pipeline += t.pipeline_ms;
      translate += t.translate_ms;
      optimize += t.optimize_ms;
      codegen_ms += t.codegen_ms;
      each_ms.push_back(t.parse_ms + t.pipeline_ms + t.translate_ms + t.optimize_ms + t.codegen_ms);
      object_bytes += object->bytes.size();
      ++compiles;
      if (!objects_dir.empty() && r == 0) {
        std::string stem = path.substr(path.find_last_of('/') + 1);
        stem = stem.substr(0, stem.rfind(".mlir"));
        const std::string out_path = objects_dir + "/" + stem + ".o";
        std::ofstream out(out_path, std::ios::binary);
        out.write(object->bytes.data(), static_cast<std::streamsize>(object->bytes.size()));
        if (!out) {
          std::fprintf(stderr, "cannot write %s\n", out_path.c_str());
          return 1;
        }
      }
    }
  }
  double total = parse + pipeline + translate + optimize + codegen_ms;
  std::printf("%d compiles (%zu files x %d) at IR -O%d, codegen -O%d%s: %.1f ms each (parse %.1f, "
              "MLIR pipeline %.1f, to LLVM IR %.1f, LLVM opt %.1f, codegen %.1f), %.0f object bytes each\n",
              compiles, files.size(), repeat, level, codegen < 0 ? level : codegen,
              verify_each ? ", verifying each pass" : "", total / compiles,
              parse / compiles, pipeline / compiles, translate / compiles, optimize / compiles,
              codegen_ms / compiles, static_cast<double>(object_bytes) / compiles);
  std::sort(each_ms.begin(), each_ms.end());
  const auto at = [&](double q) { return each_ms[static_cast<size_t>(q * static_cast<double>(each_ms.size() - 1) + 0.5)]; };
  std::printf("one compile: median %.1f ms, p90 %.1f, max %.1f, min %.1f\n", at(0.5), at(0.9), each_ms.back(),
              each_ms.front());
  return 0;
}
