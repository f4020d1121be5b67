#include "runtime/code_loader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/neuroncore/instruction_stream.h"

namespace trn::runtime {
namespace {

class NeuronCoreLoader final : public CodeLoader {
 public:
  bool Accepts(std::string_view entry_symbol) const override {
    return entry_symbol.rfind(kNeuronCoreEntryPrefix, 0) == 0;
  }
  absl::StatusOr<std::shared_ptr<const CompiledCode>> Load(const cache::Artifact& artifact, int tier) const override {
    absl::StatusOr<neuroncore::InstructionStream> stream = neuroncore::Decode(artifact.object);
    if (!stream.ok()) return stream.status();
    return MakeNeuronCoreCode(std::make_shared<const neuroncore::InstructionStream>(std::move(*stream)),
                              InfoOf(artifact, tier));
  }
};

}  // namespace

std::unique_ptr<CodeLoader> MakeNeuronCoreLoader() { return std::make_unique<NeuronCoreLoader>(); }

CodeInfo InfoOf(const cache::Artifact& artifact, int tier) {
  CodeInfo info;
  info.num_inputs = artifact.num_inputs;
  info.num_outputs = artifact.num_outputs;
  info.opt_level = artifact.levels.opt;
  info.tier = tier;
  info.bytes = static_cast<int64_t>(artifact.object.size());
  return info;
}

absl::StatusOr<std::shared_ptr<const CompiledCode>> LoadArtifact(const std::vector<std::unique_ptr<CodeLoader>>& loaders,
                                                                 const cache::Artifact& artifact, int tier) {
  if (artifact.num_inputs < 0 || artifact.num_outputs < 0 ||
      1 + artifact.num_inputs + artifact.num_outputs > kMaxCompiledArgs) {
    return absl::DataLossError("entry point arity out of range");
  }
  for (const std::unique_ptr<CodeLoader>& loader : loaders) {
    if (loader->Accepts(artifact.entry_symbol)) return loader->Load(artifact, tier);
  }
  return absl::UnimplementedError(absl::StrCat("no loader takes code with entry symbol '", artifact.entry_symbol, "'"));
}

}  // namespace trn::runtime
