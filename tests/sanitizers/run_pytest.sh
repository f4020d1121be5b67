#!/usr/bin/env bash
# The pytest subset of `./dev test --sanitize=address|thread` (docs/testing.md): the tests below
# run against the sanitizer build's package ($2/torch_trn: its own _C and libtorch_trn_core,
# the Python sources symlinked), in processes with the sanitizer runtime preloaded (python and
# libtorch are not instrumented, so the runtime must come first: LD_PRELOAD).
set -euo pipefail
SAN="$1"
PKG_PARENT="$2"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PY="${PYTHON:-python3}"

# Chosen to cover the threads and the caches through the extension in a few minutes under the
# sanitizer: eager/compile/adaptive execution, poisoning after an error, sync errors, device
# memory accounting, the bounded state and a long loop.
TESTS=(
  tests/python/test_poison.py
  tests/python/test_sync_errors.py
  tests/python/test_memory.py
  tests/python/test_bounded_state.py
)

case "$SAN" in
  address)
    export LD_PRELOAD="$(clang++-16 -print-file-name=libclang_rt.asan-x86_64.so)"
    # Leaks: python and libtorch allocate for the process lifetime (interned objects, the
    # dispatcher's registrations) and are not instrumented; LeakSanitizer runs on the C++ suites.
    export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
    ;;
  thread)
    export LD_PRELOAD="$(clang++-16 -print-file-name=libclang_rt.tsan-x86_64.so)"
    ;;
  *) echo "usage: $0 address|thread <package parent dir>" >&2; exit 2 ;;
esac
[[ -f "$LD_PRELOAD" ]] || { echo "no sanitizer runtime at $LD_PRELOAD" >&2; exit 1; }

export TRN_TEST_PACKAGE_PARENT="$PKG_PARENT"
export PYTHONPATH="$PKG_PARENT:$ROOT/tests/python"
cd "$ROOT"
exec "$PY" -m pytest -q -p no:cacheprovider "${TESTS[@]/#/$ROOT/}"
