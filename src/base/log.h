// torch_trn's messages on stderr, filtered by NEURON_LOG_LEVEL (0 silent, 1 warnings, 2 info,
// 3 debug). Each message is one line prefixed with "torch_trn: ".
//
// Thread-safe: Log may be called from any thread (one fprintf per line).
#pragma once

#include <string>

namespace trn::base {

enum class LogLevel { kWarning = 1, kInfo = 2, kDebug = 3 };

void Log(LogLevel level, const std::string& message);
// Whether messages of `level` are printed (to skip building ones that are not).
bool LogEnabled(LogLevel level);

}  // namespace trn::base
