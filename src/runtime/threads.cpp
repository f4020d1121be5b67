#include "runtime/threads.h"

#include <dlfcn.h>

namespace trn::runtime {

int OpenMpThreads() {
  using GetFn = int (*)();
  static const auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  return get != nullptr ? get() : 1;
}

void SetOpenMpThreads(int n) {
  using SetFn = void (*)(int);
  static const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set != nullptr && n > 0) set(n);
}

}  // namespace trn::runtime
