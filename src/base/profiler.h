// The profiler behind `torch_trn.profile(path)` and NEURON_PROFILE: records timed events on every
// thread of the runtime and writes them as Chrome trace-event JSON (Perfetto, chrome://tracing),
// one lane per thread:
//  - record   (recording threads): one event per recorded op, with its source line;
//  - sync     (recording threads): waiting for the stream at a sync point, with the reason;
//  - compile  (compile threads): one event per group compile: key, op count, tier, LLVM level;
//  - execute  (executor thread): one event per execution unit: how it ran (compiled, op by op
//             while its code compiles, no lowering, compile failed, eager), its group key, op
//             count and the source lines of its ops; op-by-op units nest one event per op.
// Timestamps in the file are microseconds of one steady clock since the profile started.
//
// Cost: when no profile is active, every hook is one relaxed atomic load (Enabled()).
//
// Thread-safe: every function may be called from any thread. Events are appended under one
// mutex (only while a profile is active).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/source_table.h"

namespace trn::base::profiler {

struct Event {
  const char* cat = "";  // record | sync | compile | execute
  std::string name;
  double begin_us = 0;
  double end_us = 0;
  int lane = 0;
  std::vector<SourceId> lines;                              // formatted when written
  std::vector<std::pair<std::string, std::string>> sargs;  // string arguments
  std::vector<std::pair<std::string, double>> nargs;       // numeric arguments
};

bool Enabled();
// Microseconds of the profiler's clock (0 when no profile is active; an event that began before
// its profile started is clipped to the start, one that ended before it is dropped).
double NowUs();
// Names the calling thread's lane ("executor", "compile worker 0", ...). Threads that never
// name themselves get "thread <n>"; the thread that starts the profile is named "python".
void NameThisThread(std::string name);
// Names the calling thread's lane unless it has a name already (cheap when it has).
void NameThisThreadIfUnnamed(const char* name);
// Appends `event` (its lane is set to the calling thread's). Ignored when no profile is active.
void Add(Event event);
// Appends `event` to the lane named `lane_name` (created at its first event), not the calling
// thread's: the NeuronCore model's engine lanes, whose times are modeled, not measured.
void AddToLane(Event event, const std::string& lane_name);

// Starts a profile (FailedPrecondition if one is active). `mode` goes into the file's metadata.
absl::Status Start(const std::string& mode);
// Stops the active profile and writes it to `path` (the events are kept until then).
absl::Status StopAndWrite(const std::string& path);
// Whether a profile is active (for the Python layer).
bool Active();

}  // namespace trn::base::profiler
