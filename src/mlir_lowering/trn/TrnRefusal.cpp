#include "mlir_lowering/trn/TrnRefusal.h"

#include <utility>

namespace trn::ir {
namespace {
thread_local RefusalScope* g_innermost = nullptr;
}  // namespace

RefusalScope::RefusalScope() : outer_(g_innermost) { g_innermost = this; }

RefusalScope::~RefusalScope() { g_innermost = outer_; }

void RefusalScope::Note(Refusal r) {
  if (g_innermost != nullptr) g_innermost->refusals_.push_back(std::move(r));
}

}  // namespace trn::ir
