#include "runtime/threads.h"

#include <dlfcn.h>

#include <ATen/Parallel.h>

namespace trn::runtime {

int OpenMpThreads() {
  return at::get_num_threads();  // (after ATen's first-call setting: omp_get_max_threads, or 1)
}

void SetOpenMpThreads(int n) {
  // ATen sets a thread's team size on its first parallel call, to what torch.set_num_threads()
  // last asked for: that first happens here, so it cannot undo this setting later.
  (void)at::get_num_threads();
  using SetFn = void (*)(int);
  static const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set != nullptr && n > 0) set(n);
}

}  // namespace trn::runtime
