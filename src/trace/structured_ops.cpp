#include "trace/structured_ops.h"

#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "trace/fallback.h"

namespace trn::trace {
namespace {

// Keyed by the schema's address: the dispatcher owns one schema per operator, never moved.
using OutTable = absl::flat_hash_map<const c10::FunctionSchema*, c10::OperatorHandle>;

OutTable& Table() {
  static auto* table = new OutTable();  // never destroyed: read by ops during process exit
  return *table;
}

bool SameArgument(const c10::Argument& a, const c10::Argument& b) {
  return a.name() == b.name() && *a.type() == *b.type();
}

// `candidate` takes `functional`'s arguments, then one out= tensor per return.
bool IsOutVariantOf(const c10::FunctionSchema& candidate, const c10::FunctionSchema& functional) {
  const auto& args = functional.arguments();
  const auto& cargs = candidate.arguments();
  const size_t nret = functional.returns().size();
  if (nret == 0 || cargs.size() != args.size() + nret || candidate.returns().size() != nret) {
    return false;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_out() || !SameArgument(args[i], cargs[i]) || args[i].alias_info() != nullptr) {
      return false;
    }
  }
  for (size_t i = 0; i < nret; ++i) {
    if (!cargs[args.size() + i].is_out() || !functional.returns()[i].type()->isSubtypeOf(*c10::TensorType::get())) {
      return false;
    }
  }
  return true;
}

}  // namespace

void RegisterStructuredOps() {
  static const bool done = [] {
    static auto* lib = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__,
                                          __LINE__);  // never destroyed: it owns the registrations
    c10::Dispatcher& dispatcher = c10::Dispatcher::singleton();
    absl::flat_hash_map<std::string, std::vector<c10::OperatorHandle>> overloads;  // by base name
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      if (std::optional<c10::OperatorHandle> op = dispatcher.findOp(name)) {
        overloads[name.name].push_back(*op);
      }
    }
    for (const c10::OperatorName& name :
         dispatcher.getAllOpNamesForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional)) {
      std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
      if (!op.has_value() || op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1) ||
          name.name.rfind("aten::", 0) != 0 || absl::EndsWith(name.name, "_copy")) {
        continue;  // (*_copy: a view, then a clone: the composite kernel records the clone)
      }
      bool aliases = false;  // views keep the composite kernel
      for (const c10::Argument& ret : op->schema().returns()) {
        aliases = aliases || (ret.alias_info() != nullptr && !ret.alias_info()->isWrite());
      }
      if (aliases) {
        continue;
      }
      std::string qualified = name.name.substr(6);
      if (!name.overload_name.empty()) {
        qualified += "." + name.overload_name;
      }
      lib->impl(qualified.c_str(), torch::CppFunction::makeFromBoxedFunction<&RecordingFallback>());
      for (const c10::OperatorHandle& candidate : overloads[name.name]) {
        if (IsOutVariantOf(candidate.schema(), op->schema())) {
          Table().emplace(&op->schema(), candidate);
          break;
        }
      }
    }
    return true;
  }();
  (void)done;
}

const c10::OperatorHandle* OutVariant(const c10::OperatorHandle& op) {
  const OutTable& table = Table();
  auto it = table.find(&op.schema());
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace trn::trace
