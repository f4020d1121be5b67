// trn-dis FILE: prints a trn instruction stream (instruction_stream.h) as text.
// Exit status: 0, 1 when the file cannot be read or is not a valid stream (the reason on stderr),
// 2 on a usage error.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/neuroncore/instruction_stream.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: trn-dis FILE\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "trn-dis: cannot open %s\n", argv[1]);
    return 1;
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<trn::runtime::neuroncore::InstructionStream> stream =
      trn::runtime::neuroncore::Decode(bytes.str());
  if (!stream.ok()) {
    std::fprintf(stderr, "trn-dis: %s: %s\n", argv[1], std::string(stream.status().message()).c_str());
    return 1;
  }
  std::fputs(trn::runtime::neuroncore::Disassemble(*stream).c_str(), stdout);
  return 0;
}
