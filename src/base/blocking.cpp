#include "base/blocking.h"

#include <atomic>

namespace trn::base {
namespace {
std::atomic<BlockingHook> g_enter{nullptr};
std::atomic<BlockingHook> g_exit{nullptr};
}  // namespace

void SetBlockingHooks(BlockingHook enter, BlockingHook exit) {
  g_enter = enter;
  g_exit = exit;
}

ScopedBlockingWait::ScopedBlockingWait() {
  if (BlockingHook hook = g_enter.load()) {
    hook(&state_);
  }
}

ScopedBlockingWait::~ScopedBlockingWait() {
  if (BlockingHook hook = g_exit.load()) {
    hook(&state_);
  }
}

}  // namespace trn::base
