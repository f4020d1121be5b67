// The one registry of NEURON_* environment knobs. Every knob is declared here, parsed in one
// place (knobs.cpp) and documented in docs/knobs.md (a test checks the table lists them all).
//
// Thread-safety: ParseKnobs is pure. GetKnobs() parses once (on first use, under a call_once)
// and then returns an immutable object: safe from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace trn::base {

enum class Mode { kEager, kAdaptive, kCompile };

absl::string_view ModeName(Mode mode);

// One knob's documentation entry (the source of docs/knobs.md).
struct KnobSpec {
  std::string name;
  std::string default_value;
  std::string allowed;  // human-readable set or range of values
  std::string help;
};

// Parsed values of every knob.
struct Knobs {
  Mode mode = Mode::kEager;
  std::string target = "host";      // NEURON_TARGET: host | trn2 | trn3
  bool launch_blocking = false;
  int64_t max_pending_ops = 4096;  // recording blocks beyond this many unexecuted ops
  int64_t last_ops_capacity = 256;  // ring buffer behind torch_trn.last_ops()
  int log_level = 1;                // 0 silent, 1 warnings, 2 info, 3 debug
  int64_t max_group_ops = 256;      // most ops per compiled group
  int opt_level = 3;                // LLVM level of compile-mode groups
  bool verify_passes = false;       // verify a group's MLIR after every pass (else once, at the end)
  bool perf_map = false;            // NEURON_PERF_MAP: name compiled code for Linux perf (/tmp/perf-<pid>.map)
  std::string dump_mlir_dir;        // empty: do not dump
  int64_t adaptive_group_ops = 64;  // most ops per group in adaptive mode
  int64_t compile_workers = 0;      // compile threads (ParseKnobs resolves 0: adaptive 1, compile cores)
  int64_t compile_queue = 256;      // most groups waiting for a compile thread
  bool tiering = true;              // adaptive: -O0 first, then opt_level
  bool instant_tier = true;         // adaptive: groups without code run through instant_program.h
  bool adaptive_grow = true;        // adaptive: groups grow to max_group_ops once compiled (group_growth.h)
  int64_t compile_nice = 10;        // nice value of the compile threads
  int64_t shape_variants = 8;       // compiled shape variants per group's lines (0: no bound; trn: 0)
  bool graph_replay = true;         // torch.compile(backend="neuron") graphs replayed (trace/graph_replay.h)
  int64_t executor_threads = 0;     // OpenMP threads of the executor's kernels (0: cores - 1)
  int64_t matmul_threads = 0;       // threads of one large matrix product (0: cores)
  bool host_time_thread_cpu = false;  // NEURON_HOST_TIME_CLOCK=thread_cpu: stats()["host_time"] in CPU time
  bool bench_groups = false;        // NEURON_BENCH_GROUPS: compiled groups also run op by op, timed
  int64_t device_cache_bytes = int64_t{2} << 30;  // freed device blocks kept for reuse
  std::string profile_path;         // NEURON_PROFILE: empty = no whole-process profile
  bool dist_check = true;           // collectives: ranks compare signatures first (trace/collective.h)
  std::string test_compile_fault;   // tests only: "fail" | "slow" | "bad_alloc" | "trn_internal" | ""
  // Compiled-code caches (src/runtime/cache).
  std::string cache_dir;                     // disk tier root; empty: no disk tier
  bool cache_readonly = false;               // read the disk tier, never write it
  bool cache_plans = true;                   // keep the plan cache's plans in the disk tier too
  int64_t cache_disk_bytes = int64_t{2} << 30;
  int64_t cache_mem_entries = 4096;
  int64_t cache_mem_bytes = int64_t{1} << 30;
  bool cache_distributed = true;             // "auto": share through torch.distributed's store
  std::string cache_secret;                  // distributed builds' HMAC secret ("" = the per-user file)
  double cache_lease_s = 30;                 // distributed lease lifetime after the last heartbeat
  int64_t cache_poll_ms = 50;                // how often a waiting rank polls the store
  std::string test_cache_fault;              // tests only: "kill_mid_write" | "kill_after_claim" | ""
  int64_t test_cache_uid = -1;               // tests only: owner uid the disk tier expects (-1: geteuid())
};

// All knobs, in documentation order.
const std::vector<KnobSpec>& KnobSpecs();

using EnvLookup = std::function<std::optional<std::string>(absl::string_view name)>;

// Parses every knob through `lookup` (the process environment in production, a map in tests).
// An invalid value is an InvalidArgument naming the knob, the value and the allowed values.
absl::StatusOr<Knobs> ParseKnobs(const EnvLookup& lookup);

// The process's knobs, read from the environment once. Returns the parse error if any.
const absl::StatusOr<Knobs>& GetKnobs();

}  // namespace trn::base
