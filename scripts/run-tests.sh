#!/usr/bin/env bash
# Sets up, builds everything, and runs every harp test:
#  1. lit (dialect, conversions, C API, unit tests, fuzzing, examples);
#  2. pytest natively (HARP_CPU unset: code for this machine's CPU):
#     programs executed through the JIT against NumPy, the Python package
#     against PyTorch (OpInfo samples, random programs, the digits example);
#  3. the same op families, regressions, OpInfo samples and random programs
#     again under every x86-64 ISA profile this machine can execute
#     (x86-64-v2: 128-bit vectors, x86-64-v3: 256, x86-64-v4: 512), so every
#     vector width's code generation runs wherever it can;
#  4. the op families, remainders and regressions tiled for other machines'
#     caches (HARP_CACHES: a 256 KiB and a 2 MiB L2);
#  5. the op-family integration tests again with every module also compiled
#     for the GPU down to cubin (HARP_TEST_DEVICE=cuda-compile: ptxas checks
#     each kernel; no GPU needed) and for the ISA profiles this machine
#     cannot execute (compiled, not run), and, where a GPU answers, executed
#     on it (HARP_TEST_DEVICE=cuda);
#  6. lit and the Python API suites again under AddressSanitizer and
#     UndefinedBehaviorSanitizer (scripts/run-sanitizers.sh ci, build-asan/):
#     a heap error or undefined behaviour fails the command.
# A profile or cache variant whose generated code is the native run's (the
# same target numbers, and harp-to-llvm output byte-identical on a corpus
# of modules) repeats that run and is skipped, with a line saying so.
# pytest runs on every core (pytest-xdist; HARP_TEST_JOBS overrides).
# Ends with one line: "harp: N passed, N failed".
#
# --quick: the development loop's slice, a few minutes: the build, lit,
# and the op families, gradients, regressions and API surface natively
# (no profiles, no cache variants, no GPU compile, no sanitizers). CI runs
# the full command.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

quick=0
for arg in "$@"; do
  case "$arg" in
  --quick) quick=1 ;;
  *)
    echo "usage: scripts/run-tests.sh [--quick]" >&2
    exit 2
    ;;
  esac
done

if [ "$quick" -eq 1 ]; then
  scripts/build.sh all
else
  scripts/build.sh all mlir-doc
fi

count() { # count LOG REGEX: the number before REGEX on the summary line
  sed -n "s/.*\b\([0-9][0-9]*\) $2.*/\1/p" "$1" | tail -1
}

# Kernels compiled by the tests are cached inside build/, not in the user's
# cache: a fresh clone starts empty.
export HARP_CACHE_DIR="$root/build/harp-cache"
# `import harp` from the build tree.
export PYTHONPATH="$root/build/python${PYTHONPATH:+:$PYTHONPATH}"
# Result storage starts as 0xff bytes (NaN) instead of whatever the system
# hands out (fresh pages are zero): a lowering that leaves part of a result
# unwritten fails a test instead of passing by luck (docs/Runtime.md).
export HARP_DEBUG_POISON=1
# The native run is for this machine's CPU, whatever the caller's HARP_CPU.
unset HARP_CPU
jobs="${HARP_TEST_JOBS:-$(nproc)}"
# The slowest cases of each pass are listed (where the time goes: docs/Testing.md).
pytest=(/usr/bin/python3 -m pytest -q -p no:cacheprovider -n "$jobs" --durations=15)

set +e
lit_log=build/lit-results.txt
/usr/lib/llvm-22/bin/lit -sv build/test 2>&1 | tee "$lit_log"
lit_status=${PIPESTATUS[0]}
py_log=build/pytest-results.txt
native_suites=(test/Integration test/python)
if [ "$quick" -eq 1 ]; then
  native_suites=(
    test/Integration/CPU/test_map_reduce.py test/Integration/CPU/test_gradients.py
    test/Integration/CPU/test_graph_run.py test/Integration/CPU/test_harp_run.py
    test/python/test_regressions.py test/python/test_api.py
    test/python/test_torch_surface.py test/python/test_graph.py
    test/python/test_elementwise_math.py test/python/test_losses_reductions.py
    test/python/test_compositions.py test/python/test_scatter.py
    test/python/test_optim.py test/python/test_random.py test/python/test_setitem.py
  )
fi
"${pytest[@]}" "${native_suites[@]}" 2>&1 | tee "$py_log"
py_status=${PIPESTATUS[0]}

# The numbers harp's code generation takes from a target (docs/Lowering.md,
# "The target model"; buildHarpToLLVMPipeline reads nothing else of it).
codegen_model() { # codegen_model CPU [CACHES]
  env ${2:+HARP_CACHES=$2} build/bin/harp-run --print-cpu --cpu "$1" |
    grep -E '^(vector bits|vector registers|fma|fma latency|l1d cache|l2 cache):'
}
# Modules of every code-generation path (contractions, packing, windows,
# cache blocks, chains, kernels), compared as harp-to-llvm writes them.
codegen_corpus=(examples/*.mlir test/Pipelines/*.mlir test/Runtime/Inputs/*.mlir
  test/Embedding/Inputs/*.mlir)
# same_code CPU [CACHES]: true when CPU (with CACHES) gets the code a
# native run got: the same target numbers, and byte-identical harp-to-llvm
# output on the corpus (checked, not assumed). Such a configuration repeats
# the native run and is skipped.
native_model=$(codegen_model native || true)
same_code() {
  [ -n "$native_model" ] &&
    [ "$(codegen_model "$1" "${2:-}")" = "$native_model" ] || return 1
  local f
  for f in "${codegen_corpus[@]}"; do
    cmp -s <(build/bin/harp-opt "$f" --harp-to-llvm=cpu=native 2>&1) \
      <(env ${2:+HARP_CACHES=$2} build/bin/harp-opt "$f" --harp-to-llvm="cpu=$1" 2>&1) ||
      return 1
  done
}

# Every op family, every code-generation path (register tiles, packing,
# partial reductions, transposes, windows, remainders), the regressions, the
# OpInfo samples, the random programs and the nn layers and shape ops
# (pooling, convolution groups, scans: windows and gathers on odd widths),
# and the graph language's programs and built-ins, per profile. (Not the
# examples, the harp-run CLI tests, the module and API surface tests, which
# do not depend on the vector width.)
profile_suites=(
  test/Integration/CPU/test_map_reduce.py test/Integration/CPU/test_views.py
  test/Integration/CPU/test_data_movement.py
  test/Integration/CPU/test_gradients.py
  test/Integration/CPU/test_fusion_differential.py
  test/python/test_regressions.py test/python/test_remainders.py
  test/python/test_opinfo.py
  test/python/test_differential.py
  test/python/test_nn_functional.py test/python/test_shape_ops.py
  test/Integration/CPU/test_graph_run.py test/python/test_graph.py
  test/python/test_complex.py
)
extra_logs=()
extra_status=0
profile_lines=()
compile_only=()
profiles=(x86-64-v2 x86-64-v3 x86-64-v4)
cache_variants=("32K,256K x86-64-v3" "48K,2M native")
devices=(cuda-compile)
if [ "$quick" -eq 1 ]; then
  profiles=() cache_variants=() devices=()
  profile_lines+=("  --quick: no profiles, cache variants or GPU compile (the full command runs them)")
fi
for cpu in "${profiles[@]}"; do
  if ! build/bin/harp-run --print-cpu --cpu "$cpu" | grep -qx "runs here: yes"; then
    compile_only+=("$cpu")
    continue
  fi
  if same_code "$cpu"; then
    profile_lines+=("  $cpu: skipped, the same code as native (target numbers equal; harp-to-llvm output identical on ${#codegen_corpus[@]} modules)")
    continue
  fi
  log="build/pytest-cpu-$cpu-results.txt"
  start=$SECONDS
  HARP_CPU=$cpu "${pytest[@]}" "${profile_suites[@]}" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || extra_status=1
  extra_logs+=("$log")
  profile_lines+=("  $cpu: $(count "$log" passed || true) passed, $(( $(count "$log" failed || true) + 0 )) failed, $((SECONDS - start)) s")
done

# Cache blocks and packing follow the caches, which are this machine's:
# the op families, remainders and regressions again tiled for two other
# machines' (HARP_CACHES): a 256 KiB L2 with AVX2 code (x86-64-v3, where
# this machine runs it) and a 48 KiB L1 with a 2 MiB L2 with native code.
cache_suites=(test/Integration/CPU/test_map_reduce.py
  test/python/test_regressions.py test/python/test_remainders.py)
for variant in "${cache_variants[@]}"; do
  read -r caches cpu <<<"$variant"
  if ! build/bin/harp-run --print-cpu --cpu "$cpu" | grep -qx "runs here: yes"; then
    cpu=native
  fi
  if same_code "$cpu" "$caches"; then
    profile_lines+=("  $cpu with caches $caches: skipped, the same code as native (target numbers equal; harp-to-llvm output identical on ${#codegen_corpus[@]} modules)")
    continue
  fi
  log="build/pytest-caches-$caches-results.txt"
  start=$SECONDS
  HARP_CACHES=$caches HARP_CPU=$cpu "${pytest[@]}" "${cache_suites[@]}" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || extra_status=1
  extra_logs+=("$log")
  profile_lines+=("  $cpu with caches $caches (HARP_CACHES): $(count "$log" passed || true) passed, $(( $(count "$log" failed || true) + 0 )) failed, $((SECONDS - start)) s")
done

families=(test/Integration/CPU/test_map_reduce.py test/Integration/CPU/test_views.py
  test/Integration/CPU/test_data_movement.py test/Integration/CPU/test_gradients.py)
if [ "$quick" -eq 0 ] && /usr/bin/python3 -c 'import ctypes, sys
lib = ctypes.CDLL("libcuda.so.1"); n = ctypes.c_int(0)
sys.exit(lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0)' 2>/dev/null; then
  devices+=(cuda)
fi
compile_cpus=$(IFS=,; echo "${compile_only[*]}")
for device in "${devices[@]}"; do
  log="build/pytest-$device-results.txt"
  # The compile-only pass also compiles every module for the CPU profiles
  # this machine cannot execute.
  cpus=""
  [ "$device" = cuda-compile ] && cpus="$compile_cpus"
  HARP_TEST_DEVICE=$device HARP_TEST_COMPILE_CPU=$cpus \
    "${pytest[@]}" "${families[@]}" 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || extra_status=1
  extra_logs+=("$log")
done
# The sanitizer pass (its own build, build-asan/, shared through ccache).
san_line="sanitizers: not run (--quick)"
san_status=0
san_passed=0
if [ "$quick" -eq 0 ]; then
  san_log=build/sanitizers-results.txt
  start=$SECONDS
  HARP_TEST_JOBS=$jobs scripts/run-sanitizers.sh ci 2>&1 | tee "$san_log"
  san_status=${PIPESTATUS[0]}
  san_lit=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$san_log" | tail -1)
  san_py=$(count "$san_log" passed || true)
  san_passed=$(( ${san_lit:-0} + ${san_py:-0} ))
  san_line="sanitizers (ASan, UBSan; scripts/run-sanitizers.sh ci): lit ${san_lit:-0} passed, pytest ${san_py:-0} passed, $([ "$san_status" -eq 0 ] && echo clean || echo FAILED), $((SECONDS - start)) s"
fi
set -e

lit_passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$lit_log" | tail -1)
lit_failed=0
for kind in Failed Unresolved "Timed Out" XPASS; do
  n=$(sed -n "s/^ *$kind *: *\([0-9]*\).*/\1/p" "$lit_log" | tail -1)
  lit_failed=$((lit_failed + ${n:-0}))
done
py_passed=0
py_failed=0
py_errors=0
for log in "$py_log" "${extra_logs[@]}"; do
  py_passed=$(( py_passed + $(count "$log" passed || true) + 0 ))
  py_failed=$(( py_failed + $(count "$log" failed || true) + 0 ))
  py_errors=$(( py_errors + $(count "$log" error || true) + 0 ))
done

passed=$(( ${lit_passed:-0} + ${py_passed:-0} + san_passed ))
failed=$(( lit_failed + ${py_failed:-0} + ${py_errors:-0} + (san_status != 0) ))
echo "CPU: $(build/bin/harp-run --print-cpu | sed -n 's/^llvm cpu: //p') (native: $(build/bin/harp-run --print-cpu | sed -n 's/^vector bits: //p')-bit vectors)"
echo "CPU profiles and caches run (HARP_CPU, HARP_CACHES):"
if [ ${#profile_lines[@]} -gt 0 ]; then printf '%s\n' "${profile_lines[@]}"; fi
echo "CPU profiles compiled only: ${compile_only[*]:-none}"
echo "lit: ${lit_passed:-0} passed, $lit_failed failed; pytest: ${py_passed:-0} passed, $((py_failed + py_errors)) failed (GPU runs: ${devices[*]})"
echo "$san_line"
echo "harp: $passed passed, $failed failed"
if [ "${lit_passed:-0}" -eq 0 ] || [ "${py_passed:-0}" -eq 0 ]; then
  echo "a test runner ran no test" >&2
  exit 1
fi
[ "$lit_status" -eq 0 ] && [ "$py_status" -eq 0 ] && [ "$extra_status" -eq 0 ] &&
  [ "$san_status" -eq 0 ]
