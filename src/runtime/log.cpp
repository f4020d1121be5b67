#include "runtime/log.h"

#include <cstdio>

#include "runtime/knobs.h"

namespace trn::runtime {

void Log(LogLevel level, const std::string& message) {
  const absl::StatusOr<Knobs>& knobs = GetKnobs();
  const int threshold = knobs.ok() ? knobs->log_level : 1;
  if (static_cast<int>(level) > threshold) {
    return;
  }
  std::fprintf(stderr, "torch_trn: %s\n", message.c_str());
}

}  // namespace trn::runtime
