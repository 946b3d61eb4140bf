#!/usr/bin/env bash
# Builds harp with AddressSanitizer and UndefinedBehaviorSanitizer in
# build-asan/ and runs the lit suite (harp-opt, harp-run, the C API and the
# GoogleTest binaries) and the Python suites under them. Any finding fails
# the run. Built at -O1 with line tables only (-g1: enough for the
# reports' stacks, and much less to compile than -O2 -g: cold, under 22
# min on a 2-core Zen 5 while a test run shared the cores, against 23 min
# alone at -O2 -g); ccache shares it
# between clones (CMakeLists.txt), so a fresh clone on a machine that built
# it once links it in a few minutes.
#
#   scripts/run-sanitizers.sh            # lit + every Python suite
#   scripts/run-sanitizers.sh lit        # lit only
#   scripts/run-sanitizers.sh python     # every Python suite only
#   scripts/run-sanitizers.sh ci         # lit + the API suites (the test
#                                        # command's sanitizer pass)
#
# Debian's LLVM/MLIR libraries are not instrumented. MLIR poisons memory in
# its own allocator, which an uninstrumented caller then reads legitimately:
# allow_user_poisoning=0 avoids that false "use-after-poison". The Python
# interpreter is not instrumented either, so the ASan runtime is preloaded
# and leak checking is off there (the interpreter's own allocations are not
# freed at exit).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
what="${1:-all}"
case "$what" in
all | lit | python | ci) ;;
*)
  echo "usage: scripts/run-sanitizers.sh [all|lit|python|ci]" >&2
  exit 2
  ;;
esac

scripts/setup.sh
jobs="${HARP_JOBS:-2}"
build=build-asan
flags="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=all -fno-omit-frame-pointer"
mkdir -p "$build"
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S . -B "$build" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DLLVM_USE_LINKER=lld \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DPython3_EXECUTABLE=/usr/bin/python3 >"$build/cmake.log" 2>&1 ||
    { cat "$build/cmake.log"; exit 1; }
fi
ninja -C "$build" -j"$jobs" all

# Compiled code on one thread: LeakSanitizer's exit check crashes reading
# the dynamic TLS of an OpenMP worker thread (libomp is dlopen'ed after
# the threads start; "Tracer caught signal 11", GCC 12's libasan), and harp
# compiles threaded code by default on more than one core. The threaded
# code itself runs here on one thread; test_threads.py runs it on two.
export OMP_NUM_THREADS=1
export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=1:abort_on_error=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export HARP_CACHE_DIR="$root/$build/harp-cache"
# The JIT verifies a module once after lowering; here after every pass, as
# harp-opt does, so a pass that leaves invalid IR fails by its own name
# (docs/Runtime.md).
export HARP_DEBUG_VERIFY_PASSES=1
status=0
if [ "$what" = all ] || [ "$what" = lit ] || [ "$what" = ci ]; then
  /usr/lib/llvm-22/bin/lit -sv "$build/test" || status=1
fi
# The Python API's own code (argument handling, graphs, realization,
# autograd, the runtime's buffers) under the sanitizers: what the API
# suites reach. A heap error there corrupts the user's process.
suites=(test/python test/Integration/CPU/test_gradients.py
  test/Integration/CPU/test_harp_run.py)
if [ "$what" = ci ]; then
  suites=(test/python/test_api.py test/python/test_regressions.py
    test/python/test_builders.py test/python/test_losses_reductions.py test/python/test_scatter.py
    test/python/test_torch_surface.py test/python/test_setitem.py
    test/python/test_dlpack.py test/python/test_safetensors.py
    test/python/test_autograd_grad.py)
fi
if [ "$what" = all ] || [ "$what" = python ] || [ "$what" = ci ]; then
  asan=$(gcc -print-file-name=libasan.so)
  ubsan=$(gcc -print-file-name=libubsan.so)
  ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=0:halt_on_error=1" \
    LD_PRELOAD="$asan:$ubsan" PYTHONPATH="$root/$build/python" \
    HARP_RUN="$root/$build/bin/harp-run" \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider -n "${HARP_TEST_JOBS:-$(nproc)}" \
    "${suites[@]}" || status=1
fi
exit $status
