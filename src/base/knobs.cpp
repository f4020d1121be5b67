#include "base/knobs.h"

#include <algorithm>
#include <thread>

#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace trn::base {
namespace {

absl::Status BadValue(const KnobSpec& spec, absl::string_view value) {
  return absl::InvalidArgumentError(absl::StrCat(spec.name, "='", value, "' is not valid; allowed: ",
                                                 spec.allowed, " (see docs/knobs.md)"));
}

const KnobSpec& Spec(absl::string_view name) {
  for (const KnobSpec& spec : KnobSpecs()) {
    if (spec.name == name) {
      return spec;
    }
  }
  std::abort();  // invariant: every parsed knob is declared in KnobSpecs()
}

absl::StatusOr<bool> ParseBool(const KnobSpec& spec, absl::string_view value) {
  std::string v = absl::AsciiStrToLower(value);
  if (v == "1" || v == "true" || v == "yes" || v == "on") {
    return true;
  }
  if (v == "0" || v == "false" || v == "no" || v == "off" || v.empty()) {
    return false;
  }
  return BadValue(spec, value);
}

absl::StatusOr<int64_t> ParsePositive(const KnobSpec& spec, absl::string_view value, int64_t min) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(value, &n) || n < min) {
    return BadValue(spec, value);
  }
  return n;
}

}  // namespace

absl::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kEager:
      return "eager";
    case Mode::kAdaptive:
      return "adaptive";
    case Mode::kCompile:
      return "compile";
  }
  return "?";
}

const std::vector<KnobSpec>& KnobSpecs() {
  static const std::vector<KnobSpec> kSpecs = {
      {"NEURON_MODE", "eager", "eager | adaptive | compile",
       "How recorded ops execute: op by op (eager), small groups compiled in the background "
       "(adaptive), or whole segments compiled at sync points (compile). Read once at import."},
      {"NEURON_TARGET", "host", "host | trn2 | trn3",
       "What compiled groups run on: host code (LLVM, this machine's CPU), or the instruction "
       "stream of a Trainium NeuronCore (trn2, trn3) executed by the NeuronCore model with "
       "modeled time (docs/trn_target.md). Under trn targets a group the trn pipeline cannot "
       "lower runs as host code, its transfers charged; eager mode compiles each op signature "
       "once. Read once at import."},
      {"NEURON_LAUNCH_BLOCKING", "0", "0 | 1",
       "Execute each op before the Python call returns (errors surface at the op's own line)."},
      {"NEURON_MAX_PENDING_OPS", "4096", "integer >= 1",
       "Recorded but unexecuted ops allowed before recording blocks (bounds memory)."},
      {"NEURON_LAST_OPS", "256", "integer >= 1",
       "Executed ops remembered for torch_trn.last_ops()."},
      {"NEURON_LOG_LEVEL", "1", "0 (silent) | 1 (warnings) | 2 (info) | 3 (debug)",
       "Verbosity of torch_trn's messages on stderr."},
      {"NEURON_MAX_GROUP_OPS", "256", "integer >= 1",
       "Most ops in one compiled group (compile mode); longer runs are cut into several groups, at "
       "content-defined points from half this many on."},
      {"NEURON_OPT_LEVEL", "3", "0 | 1 | 2 | 3",
       "LLVM optimisation level of compiled groups (0 compiles ~10x faster, runs ~2.5x slower). "
       "In adaptive mode with tiering, the level of the second (optimised) build."},
      {"NEURON_VERIFY_PASSES", "0", "0 | 1",
       "Verify a group's MLIR after every pass of its host compile (O0 compiles take ~12 % longer; "
       "names the pass that broke a lowering). 0: verified once, after the pipeline."},
      {"NEURON_PERF_MAP", "0", "0 | 1",
       "For profiling with Linux perf: each loaded compiled group's functions are appended to "
       "/tmp/perf-<pid>.map, so perf report names them (trn group <key> <symbol>) instead of "
       "[unknown]. The file stays after exit."},
      {"NEURON_ADAPTIVE_GROUP_OPS", "64", "integer >= 1",
       "adaptive mode: recorded ops are cut into groups of at most this many, at content-defined "
       "points from half this many on (an inserted op moves only nearby cuts); a group starts "
       "executing once it is cut or at a sync point."},
      {"NEURON_ADAPTIVE_GROW", "1", "0 | 1",
       "adaptive mode: once the background compiler has caught up (a step planned no new group "
       "and no compile is queued), groups grow to NEURON_MAX_GROUP_OPS as in compile mode: one "
       "probe step plans them and runs them without code, they build while the small groups "
       "keep running, then they replace them (docs/adaptive.md, \"Groups grow once compiled\"). "
       "0: groups stay at NEURON_ADAPTIVE_GROUP_OPS."},
      {"NEURON_COMPILE_WORKERS", "0", "integer 0..16",
       "Compile threads. adaptive: the background compilers (0 = 1, leaving the other cores to "
       "execution). compile: the threads building a segment's new groups in parallel while the "
       "executor runs the built ones (0 = one per core)."},
      {"NEURON_COMPILE_QUEUE", "256", "integer >= 1",
       "adaptive mode: most groups waiting for a compile thread; a group that finds the queue "
       "full runs op by op and is queued again when next seen."},
      {"NEURON_TIERING", "1", "0 | 1",
       "adaptive mode: build each group first fast (LLVM IR -O1, codegen -O0), then again at "
       "NEURON_OPT_LEVEL in the background, replacing the first build (docs/adaptive.md)."},
      {"NEURON_INSTANT_TIER", "1", "0 | 1",
       "adaptive mode: while a group has no compiled code, run its chains of elementwise float32 "
       "ops tile by tile through precompiled vector kernels (the instant tier; other ops with "
       "ATen) instead of op by op (docs/adaptive.md)."},
      {"NEURON_COMPILE_NICE", "10", "integer 0..19",
       "adaptive mode: nice value of the compile threads, so that recording and execution win "
       "the CPU when both want it."},
      {"NEURON_SHAPE_VARIANTS", "8 (host), 0 (trn2, trn3)", "integer >= 0",
       "compile and adaptive mode: at most this many shape variants of a group (the same ops "
       "from the same source lines with other shapes, e.g. the attention of each new token in "
       "generate()) are compiled; further variants run op by op. 0: no bound (the default on "
       "trn targets, whose compiles take milliseconds and whose op-by-op runs leave the core)."},
      {"NEURON_GRAPH_REPLAY", "1", "0 | 1",
       "torch.compile(backend=\"neuron\"): a graph's device ops are recorded once per input "
       "signature and re-issued on later calls without running the graph's Python, the "
       "dispatcher or Meta inference per op (docs/ecosystem.md). 0: every call records its ops."},
      {"NEURON_EXECUTOR_THREADS", "0", "integer >= 0",
       "OpenMP threads the executor's CPU kernels use; 0 = one less than the machine's cores "
       "(at least 1), leaving a core to the recording thread (docs/adaptive.md)."},
      {"NEURON_MATMUL_THREADS", "0", "integer 0..64",
       "Threads that run one large matrix product of the executor (mm, addmm, bmm, baddbmm, "
       "op by op or called from compiled code): the executor and helpers taking chunks of the "
       "result; 0 = one per core. Helpers sleep when idle and a chunk nobody took runs on the "
       "executor, so a busy recording thread never stalls a product (docs/adaptive.md)."},
      {"NEURON_HOST_TIME_CLOCK", "wall", "wall | thread_cpu",
       "Clock of stats()[\"host_time\"]: wall time, or the CPU time of the thread doing the work "
       "(thread_cpu: what recording, flushing and executing cost when other processes share the "
       "cores; bench/steady.py reports both)."},
      {"NEURON_BENCH_GROUPS", "0", "0 | 1",
       "For benchmarks: every compiled group also runs op by op on the same buffers (restored "
       "before the compiled run), timed; torch_trn._C.group_bench() lists both times per group "
       "(bench/steady.py --groups). Slow."},
      {"NEURON_DEVICE_CACHE_BYTES", "2147483648", "integer >= 0",
       "Bytes of freed device memory blocks (1 MiB and larger) kept for reuse instead of being "
       "returned to the system; torch_trn.empty_cache() releases them (docs/memory.md)."},
      {"NEURON_DIST_CHECK", "1", "0 | 1",
       "Collectives on neuron tensors: the ranks first exchange each collective's signature "
       "(collective, sequence number, dtype, element counts, shapes), so a mismatched collective "
       "fails on every rank naming both sides; 0 skips the exchange (one small all-gather each)."},
      {"NEURON_TEST_COMPILE_FAULT", "(unset)", "fail | slow | bad_alloc | trn_internal",
       "For tests only: every group compile fails (fail), takes 2 s longer (slow), runs out "
       "of memory (bad_alloc: std::bad_alloc thrown on the compile thread), or, on a trn target, "
       "its trn pipeline fails without refusing an op (trn_internal: an internal error, which "
       "fails the build)."},
      {"NEURON_PROFILE", "(unset)", "a file path",
       "Profile the whole process and write the Chrome trace-event timeline there at exit "
       "(same as wrapping the program in torch_trn.profile(path))."},
      {"NEURON_DUMP_MLIR", "(unset)", "a directory path",
       "Write each compiled group's MLIR module there as <key>.mlir, each op located at the ATen op "
       "and the model's line that issued it (for debugging)."},
      {"NEURON_CACHE_DIR", "~/.cache/torch_trn", "a directory path | off",
       "Disk cache of compiled groups, shared by every process of the user (compile and adaptive "
       "modes; $XDG_CACHE_HOME/torch_trn when XDG_CACHE_HOME is set). `off` (or empty) disables "
       "it (docs/cache.md)."},
      {"NEURON_CACHE_READONLY", "0", "0 | 1",
       "Use the disk cache read-only (shared or read-only mounts): never write, delete or touch "
       "its files."},
      {"NEURON_CACHE_PLANS", "1", "0 | 1",
       "Keep the plans of flushed segments in the disk cache too, so a restarted process plans "
       "no group of its first steps again (docs/cache.md, Plans). 0: plans are kept in memory only."},
      {"NEURON_CACHE_DISK_BYTES", "2147483648", "integer >= 0",
       "Size bound of the disk cache in bytes; least recently used entries are evicted."},
      {"NEURON_CACHE_MEM_ENTRIES", "4096", "integer >= 1",
       "Most compiled groups kept loaded in memory (least recently used evicted)."},
      {"NEURON_CACHE_MEM_BYTES", "1073741824", "integer >= 1",
       "Most bytes of object code kept loaded in memory (least recently used evicted)."},
      {"NEURON_CACHE_DISTRIBUTED", "auto", "auto | 0",
       "auto: when torch.distributed is initialised with more than one rank, ranks share "
       "compiles through the process group's store (one rank compiles a group, the others fetch "
       "it). 0: every rank compiles for itself."},
      {"NEURON_CACHE_SECRET", "(unset)", "a string of >= 16 characters",
       "Distributed cache: the per-job secret that signs the builds ranks share through the "
       "store (HMAC-SHA256; the store itself is unauthenticated). Set it to the same value on "
       "every rank, e.g. `export NEURON_CACHE_SECRET=$(openssl rand -hex 32)` before torchrun; "
       "needed when ranks span hosts. Unset: a per-user file only the user can read "
       "($XDG_CONFIG_HOME or ~/.config /torch_trn/cache_secret, created on first use). Never "
       "printed (docs/cache.md)."},
      {"NEURON_CACHE_LEASE_S", "30", "number > 0",
       "Distributed cache: a rank's claim on a group it compiles expires this many seconds after "
       "its last heartbeat (heartbeats every third of it), so another rank compiles it if the "
       "holder died."},
      {"NEURON_CACHE_POLL_MS", "50", "integer 1..60000",
       "Distributed cache: how often a rank waiting for another rank's compile checks the store."},
      {"NEURON_TEST_CACHE_FAULT", "(unset)", "kill_mid_write | kill_after_claim",
       "For tests only: SIGKILL this process halfway through its first disk-cache write, or right "
       "after it claims its first distributed lease."},
      {"NEURON_TEST_CACHE_UID", "(unset)", "integer >= 0",
       "For tests only: the owner uid the disk cache's trust check expects instead of the "
       "effective uid (tests run as root can then exercise foreign-owner entries)."},
  };
  return kSpecs;
}

absl::StatusOr<Knobs> ParseKnobs(const EnvLookup& lookup) {
  Knobs knobs;
  // A boolean knob into `*out` when it is set.
  auto parse_bool = [&lookup](const char* name, bool* out) -> absl::Status {
    if (auto v = lookup(name)) {
      absl::StatusOr<bool> b = ParseBool(Spec(name), *v);
      if (!b.ok()) return b.status();
      *out = *b;
    }
    return absl::OkStatus();
  };
  if (auto v = lookup("NEURON_MODE")) {
    std::string mode = absl::AsciiStrToLower(*v);
    if (mode == "eager" || mode.empty()) {
      knobs.mode = Mode::kEager;
    } else if (mode == "adaptive") {
      knobs.mode = Mode::kAdaptive;
    } else if (mode == "compile") {
      knobs.mode = Mode::kCompile;
    } else {
      return BadValue(Spec("NEURON_MODE"), *v);
    }
  }
  if (auto v = lookup("NEURON_TARGET")) {
    std::string target = absl::AsciiStrToLower(*v);
    if (target.empty()) target = "host";
    if (target != "host" && target != "trn2" && target != "trn3") {
      return BadValue(Spec("NEURON_TARGET"), *v);
    }
    knobs.target = target;
  }
  if (absl::Status st = parse_bool("NEURON_DIST_CHECK", &knobs.dist_check); !st.ok()) {
    return st;
  }
  if (absl::Status st = parse_bool("NEURON_LAUNCH_BLOCKING", &knobs.launch_blocking); !st.ok()) {
    return st;
  }
  struct IntKnob {
    const char* name;
    int64_t min;
    int64_t max;
    int64_t* field;
  };
  int64_t log_level = knobs.log_level, opt_level = knobs.opt_level, tiering = knobs.tiering ? 1 : 0,
          instant_tier = knobs.instant_tier ? 1 : 0, adaptive_grow = knobs.adaptive_grow ? 1 : 0,
          verify_passes = knobs.verify_passes ? 1 : 0, perf_map = knobs.perf_map ? 1 : 0;
  const IntKnob int_knobs[] = {
      {"NEURON_MAX_PENDING_OPS", 1, INT64_MAX, &knobs.max_pending_ops},
      {"NEURON_LAST_OPS", 1, INT64_MAX, &knobs.last_ops_capacity},
      {"NEURON_LOG_LEVEL", 0, 3, &log_level},
      {"NEURON_MAX_GROUP_OPS", 1, INT64_MAX, &knobs.max_group_ops},
      {"NEURON_OPT_LEVEL", 0, 3, &opt_level},
      {"NEURON_VERIFY_PASSES", 0, 1, &verify_passes},
      {"NEURON_PERF_MAP", 0, 1, &perf_map},
      {"NEURON_ADAPTIVE_GROUP_OPS", 1, INT64_MAX, &knobs.adaptive_group_ops},
      {"NEURON_COMPILE_WORKERS", 0, 16, &knobs.compile_workers},
      {"NEURON_COMPILE_QUEUE", 1, INT64_MAX, &knobs.compile_queue},
      {"NEURON_TIERING", 0, 1, &tiering},
      {"NEURON_INSTANT_TIER", 0, 1, &instant_tier},
      {"NEURON_ADAPTIVE_GROW", 0, 1, &adaptive_grow},
      {"NEURON_COMPILE_NICE", 0, 19, &knobs.compile_nice},
      {"NEURON_SHAPE_VARIANTS", 0, INT64_MAX, &knobs.shape_variants},
      {"NEURON_EXECUTOR_THREADS", 0, 1024, &knobs.executor_threads},
      {"NEURON_MATMUL_THREADS", 0, 64, &knobs.matmul_threads},
      {"NEURON_DEVICE_CACHE_BYTES", 0, INT64_MAX, &knobs.device_cache_bytes},
  };
  for (const IntKnob& k : int_knobs) {
    if (auto v = lookup(k.name)) {
      auto n = ParsePositive(Spec(k.name), *v, k.min);
      if (!n.ok()) {
        return n.status();
      }
      if (*n > k.max) {
        return BadValue(Spec(k.name), *v);
      }
      *k.field = *n;
    }
  }
  if (knobs.target != "host" && !lookup("NEURON_SHAPE_VARIANTS")) {
    // A trn compile is the trn pipeline (milliseconds, no LLVM), and a variant run op by op leaves
    // the NeuronCore: AdamW's per-parameter updates (the same ops from the user's opt.step() line,
    // one shape per parameter) exceeded 8 variants in convnextv2_atto and ran on the host.
    knobs.shape_variants = 0;
  }
  knobs.log_level = static_cast<int>(log_level);
  knobs.opt_level = static_cast<int>(opt_level);
  knobs.tiering = tiering != 0;
  knobs.instant_tier = instant_tier != 0;
  knobs.adaptive_grow = adaptive_grow != 0;
  knobs.verify_passes = verify_passes != 0;
  knobs.perf_map = perf_map != 0;
  if (knobs.compile_workers == 0) {
    // Background compiles must not take the cores execution runs on; a compile-mode sync waits
    // for its builds anyway, so they get every core.
    knobs.compile_workers =
        knobs.mode == Mode::kAdaptive
            ? 1
            : std::clamp<int64_t>(static_cast<int64_t>(std::thread::hardware_concurrency()), 1, 16);
  }
  if (knobs.executor_threads == 0) {
    knobs.executor_threads = std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency()) - 1);
  }
  if (knobs.matmul_threads == 0) {
    knobs.matmul_threads = std::clamp<int64_t>(static_cast<int64_t>(std::thread::hardware_concurrency()), 1, 64);
  }
  if (absl::Status st = parse_bool("NEURON_GRAPH_REPLAY", &knobs.graph_replay); !st.ok()) {
    return st;
  }
  if (absl::Status st = parse_bool("NEURON_BENCH_GROUPS", &knobs.bench_groups); !st.ok()) {
    return st;
  }
  if (auto v = lookup("NEURON_HOST_TIME_CLOCK")) {
    const std::string clock = absl::AsciiStrToLower(*v);
    if (clock != "wall" && clock != "thread_cpu" && !clock.empty()) {
      return BadValue(Spec("NEURON_HOST_TIME_CLOCK"), *v);
    }
    knobs.host_time_thread_cpu = clock == "thread_cpu";
  }
  if (auto v = lookup("NEURON_DUMP_MLIR")) {
    knobs.dump_mlir_dir = *v;
  }
  if (auto v = lookup("NEURON_TEST_COMPILE_FAULT")) {
    if (!v->empty() && *v != "fail" && *v != "slow" && *v != "bad_alloc" && *v != "trn_internal") {
      return BadValue(Spec("NEURON_TEST_COMPILE_FAULT"), *v);
    }
    knobs.test_compile_fault = *v;
  }
  if (auto v = lookup("NEURON_PROFILE")) {
    knobs.profile_path = *v;
  }
  if (auto v = lookup("NEURON_CACHE_DIR")) {
    knobs.cache_dir = absl::AsciiStrToLower(*v) == "off" ? "" : *v;
  } else if (auto xdg = lookup("XDG_CACHE_HOME"); xdg && !xdg->empty()) {
    knobs.cache_dir = absl::StrCat(*xdg, "/torch_trn");
  } else if (auto home = lookup("HOME"); home && !home->empty()) {
    knobs.cache_dir = absl::StrCat(*home, "/.cache/torch_trn");
  }
  if (absl::Status st = parse_bool("NEURON_CACHE_PLANS", &knobs.cache_plans); !st.ok()) {
    return st;
  }
  if (absl::Status st = parse_bool("NEURON_CACHE_READONLY", &knobs.cache_readonly); !st.ok()) {
    return st;
  }
  const IntKnob cache_knobs[] = {
      {"NEURON_CACHE_DISK_BYTES", 0, INT64_MAX, &knobs.cache_disk_bytes},
      {"NEURON_CACHE_MEM_ENTRIES", 1, INT64_MAX, &knobs.cache_mem_entries},
      {"NEURON_CACHE_MEM_BYTES", 1, INT64_MAX, &knobs.cache_mem_bytes},
      {"NEURON_CACHE_POLL_MS", 1, 60000, &knobs.cache_poll_ms},
      {"NEURON_TEST_CACHE_UID", 0, INT64_MAX, &knobs.test_cache_uid},
  };
  for (const IntKnob& k : cache_knobs) {
    if (auto v = lookup(k.name); v && !v->empty()) {
      auto n = ParsePositive(Spec(k.name), *v, k.min);
      if (!n.ok()) {
        return n.status();
      }
      if (*n > k.max) {
        return BadValue(Spec(k.name), *v);
      }
      *k.field = *n;
    }
  }
  if (auto v = lookup("NEURON_CACHE_DISTRIBUTED")) {
    std::string d = absl::AsciiStrToLower(*v);
    if (d == "auto" || d == "1" || d.empty()) {
      knobs.cache_distributed = true;
    } else if (d == "0" || d == "off") {
      knobs.cache_distributed = false;
    } else {
      return BadValue(Spec("NEURON_CACHE_DISTRIBUTED"), *v);
    }
  }
  if (auto v = lookup("NEURON_CACHE_SECRET")) {
    if (!v->empty() && v->size() < 16) {
      return absl::InvalidArgumentError("NEURON_CACHE_SECRET must be at least 16 characters long");
    }
    knobs.cache_secret = *v;
  }
  if (auto v = lookup("NEURON_CACHE_LEASE_S")) {
    double s = 0;
    if (!absl::SimpleAtod(*v, &s) || !(s > 0) || s > 1e6) {
      return BadValue(Spec("NEURON_CACHE_LEASE_S"), *v);
    }
    knobs.cache_lease_s = s;
  }
  if (auto v = lookup("NEURON_TEST_CACHE_FAULT")) {
    if (!v->empty() && *v != "kill_mid_write" && *v != "kill_after_claim") {
      return BadValue(Spec("NEURON_TEST_CACHE_FAULT"), *v);
    }
    knobs.test_cache_fault = *v;
  }
  return knobs;
}

const absl::StatusOr<Knobs>& GetKnobs() {
  static const absl::StatusOr<Knobs> kKnobs = ParseKnobs([](absl::string_view name) {
    const char* v = std::getenv(std::string(name).c_str());
    return v == nullptr ? std::nullopt : std::optional<std::string>(v);
  });
  return kKnobs;
}

}  // namespace trn::base
