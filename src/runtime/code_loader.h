// Code loaders: a build artifact (runtime/cache/entry_format.h: the bytes the compiler made or a
// cache tier read back) -> runtime::CompiledCode, one loader per target format. The model is
// IREE's hal/local/executable_loader.h: a loader says whether it takes an artifact's format
// (here named by its entry symbol), then loads it, refusing malformed bytes with a reason; the
// caller asks each of its loaders in turn (LoadArtifact).
//
// Loaders here: the NeuronCore's (instruction streams, decoded and checked). Host object code is
// linked by the compiler's ORC loader (mlir_lowering::LoadObject), which the scheduler wraps
// as a CodeLoader (scheduler/group_compiler.cpp): the runtime includes nothing of the compiler.
//
// Thread-safety: a loader is immutable after construction; Load may run on any thread,
// concurrently.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/cache/entry_format.h"
#include "runtime/compiled_run.h"

namespace trn::runtime {

// Entry symbol of a NeuronCore instruction stream: this prefix and the target ("trn-stream:trn2").
inline constexpr char kNeuronCoreEntryPrefix[] = "trn-stream:";

class CodeLoader {
 public:
  virtual ~CodeLoader() = default;
  // Whether `entry_symbol` names this loader's format. Loading may still fail (malformed bytes).
  virtual bool Accepts(std::string_view entry_symbol) const = 0;
  // The artifact's code, built at `tier`; an error says why the bytes are not usable.
  virtual absl::StatusOr<std::shared_ptr<const CompiledCode>> Load(const cache::Artifact& artifact, int tier) const = 0;
};

// NeuronCore instruction streams (entry symbols kNeuronCoreEntryPrefix + target).
std::unique_ptr<CodeLoader> MakeNeuronCoreLoader();

// Loads `artifact` with the first of `loaders` that accepts it (the arity is checked first);
// kDataLoss when its arity is out of range, kUnimplemented when no loader takes its format.
absl::StatusOr<std::shared_ptr<const CompiledCode>> LoadArtifact(const std::vector<std::unique_ptr<CodeLoader>>& loaders,
                                                                 const cache::Artifact& artifact, int tier);

// The CodeInfo of an artifact loaded at `tier`.
CodeInfo InfoOf(const cache::Artifact& artifact, int tier);

}  // namespace trn::runtime
