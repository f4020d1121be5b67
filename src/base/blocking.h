// Hooks around blocking waits. The Python extension installs hooks that release the GIL while a
// thread waits for the executor (so a Python-implemented kernel or another Python thread can run)
// and take it back afterwards. The core itself has no Python dependency.
//
// Thread-safe: SetBlockingHooks is called once at module import, before any wait.
#pragma once

namespace trn::base {

using BlockingHook = void (*)(void** state);

void SetBlockingHooks(BlockingHook enter, BlockingHook exit);

// RAII: runs the enter hook on construction and the exit hook on destruction.
class ScopedBlockingWait {
 public:
  ScopedBlockingWait();
  ~ScopedBlockingWait();
  ScopedBlockingWait(const ScopedBlockingWait&) = delete;
  ScopedBlockingWait& operator=(const ScopedBlockingWait&) = delete;

 private:
  void* state_ = nullptr;
};

}  // namespace trn::base
