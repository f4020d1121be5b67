#include "base/log.h"

#include <cstdio>

#include "base/knobs.h"

namespace trn::base {

bool LogEnabled(LogLevel level) {
  const absl::StatusOr<Knobs>& knobs = GetKnobs();
  const int threshold = knobs.ok() ? knobs->log_level : 1;
  return static_cast<int>(level) <= threshold;
}

void Log(LogLevel level, const std::string& message) {
  if (!LogEnabled(level)) {
    return;
  }
  std::fprintf(stderr, "torch_trn: %s\n", message.c_str());
}

}  // namespace trn::base
