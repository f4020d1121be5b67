#include "base/profiler.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace trn::base::profiler {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_enabled{false};

struct Recorder {
  absl::Mutex mu;
  Clock::time_point start ABSL_GUARDED_BY(mu);
  std::string mode ABSL_GUARDED_BY(mu);
  std::vector<Event> events ABSL_GUARDED_BY(mu);
  std::map<int, std::string> lane_names ABSL_GUARDED_BY(mu);
  int next_lane ABSL_GUARDED_BY(mu) = 1;
};

Recorder& R() {
  static auto* r = new Recorder;  // never destroyed: threads may add events during exit
  return *r;
}

std::atomic<int64_t> g_start_ns{0};  // Clock epoch ns of the active profile's start

struct ThreadLane {
  int lane = 0;  // 0: not assigned yet
  std::string name;
};
thread_local ThreadLane t_lane;

int LaneLocked(Recorder& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu) {
  if (t_lane.lane == 0) {
    t_lane.lane = r.next_lane++;
  }
  auto it = r.lane_names.find(t_lane.lane);
  if (it == r.lane_names.end()) {
    r.lane_names[t_lane.lane] = t_lane.name.empty() ? absl::StrCat("thread ", t_lane.lane) : t_lane.name;
  }
  return t_lane.lane;
}

}  // namespace

bool Enabled() { return g_enabled.load(std::memory_order_relaxed); }

bool Active() { return Enabled(); }

double NowUs() {
  if (!Enabled()) {
    return 0;  // "before the profile": Add clips it to the profile's start
  }
  // Absolute (clock epoch) microseconds: an event that straddles two profiles keeps its true
  // start; StopAndWrite makes times relative to the profile's start.
  return static_cast<double>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count()) /
         1000.0;
}

void NameThisThread(std::string name) {
  Recorder& r = R();
  absl::MutexLock lock(&r.mu);
  t_lane.name = std::move(name);
  if (t_lane.lane != 0) {
    r.lane_names[t_lane.lane] = t_lane.name;
  }
}

void NameThisThreadIfUnnamed(const char* name) {
  if (t_lane.name.empty()) {
    NameThisThread(name);
  }
}

void Add(Event event) {
  if (!Enabled()) {
    return;
  }
  Recorder& r = R();
  absl::MutexLock lock(&r.mu);
  if (!Enabled()) {
    return;
  }
  const double start_us = static_cast<double>(g_start_ns.load(std::memory_order_relaxed)) / 1000.0;
  if (event.end_us < start_us) {
    return;  // ended before this profile started (a previous profile's event)
  }
  event.begin_us = std::max(event.begin_us, start_us);  // began before the profile: clip
  event.lane = LaneLocked(r);
  r.events.push_back(std::move(event));
}

void AddToLane(Event event, const std::string& lane_name) {
  Recorder& r = R();
  absl::MutexLock lock(&r.mu);
  if (!Enabled()) {
    return;
  }
  const double start_us = static_cast<double>(g_start_ns.load(std::memory_order_relaxed)) / 1000.0;
  if (event.end_us < start_us) {
    return;
  }
  event.begin_us = std::max(event.begin_us, start_us);
  int lane = 0;
  for (const auto& [id, name] : r.lane_names) {
    if (name == lane_name) lane = id;
  }
  if (lane == 0) {
    lane = r.next_lane++;
    r.lane_names[lane] = lane_name;
  }
  event.lane = lane;
  r.events.push_back(std::move(event));
}

absl::Status Start(const std::string& mode) {
  Recorder& r = R();
  absl::MutexLock lock(&r.mu);
  if (Enabled()) {
    return absl::FailedPreconditionError("a profile is already active (profiles do not nest)");
  }
  r.events.clear();
  r.lane_names.clear();
  r.mode = mode;
  if (t_lane.name.empty()) {
    t_lane.name = "python";
  }
  r.start = Clock::now();
  g_start_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(r.start.time_since_epoch()).count());
  LaneLocked(r);
  g_enabled.store(true);
  return absl::OkStatus();
}

absl::Status StopAndWrite(const std::string& path) {
  std::vector<Event> events;
  std::map<int, std::string> lanes;
  std::string mode;
  const double start_us = static_cast<double>(g_start_ns.load()) / 1000.0;
  {
    Recorder& r = R();
    absl::MutexLock lock(&r.mu);
    if (!Enabled()) {
      return absl::FailedPreconditionError("no profile is active");
    }
    g_enabled.store(false);
    events.swap(r.events);
    lanes.swap(r.lane_names);
    mode = r.mode;
  }
  // Per lane in time order (a lane's events are appended when they end, so nested events come
  // before their parent).
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.lane != b.lane ? a.lane < b.lane : a.begin_us < b.begin_us;
  });
  nlohmann::json trace_events = nlohmann::json::array();
  trace_events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0},
                          {"args", {{"name", absl::StrCat("torch_trn (NEURON_MODE=", mode, ")")}}}});
  for (const auto& [lane, name] : lanes) {
    trace_events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", lane}, {"args", {{"name", name}}}});
    trace_events.push_back(
        {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", lane}, {"args", {{"sort_index", lane}}}});
  }
  SourceTable& sources = GlobalSourceTable();
  for (const Event& e : events) {
    nlohmann::json args = nlohmann::json::object();
    for (const auto& [k, v] : e.sargs) args[k] = v;
    for (const auto& [k, v] : e.nargs) args[k] = v;
    if (!e.lines.empty()) {
      nlohmann::json lines = nlohmann::json::array();
      for (SourceId id : e.lines) lines.push_back(sources.Format(id));
      args["lines"] = std::move(lines);
    }
    trace_events.push_back({{"name", e.name},
                            {"cat", e.cat},
                            {"ph", "X"},
                            {"ts", e.begin_us - start_us},
                            {"dur", std::max(0.0, e.end_us - e.begin_us)},
                            {"pid", 1},
                            {"tid", e.lane},
                            {"args", std::move(args)}});
  }
  nlohmann::json doc = {{"traceEvents", std::move(trace_events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData", {{"producer", "torch_trn"}, {"mode", mode}}}};
  std::ofstream out(path);
  if (!out) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write the profile to '", path, "'"));
  }
  out << doc.dump() << "\n";
  out.close();
  if (!out) {
    return absl::DataLossError(absl::StrCat("writing the profile to '", path, "' failed"));
  }
  return absl::OkStatus();
}

}  // namespace trn::base::profiler
