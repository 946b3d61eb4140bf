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
#     on it (HARP_TEST_DEVICE=cuda).
# pytest runs on every core (pytest-xdist; HARP_TEST_JOBS overrides).
# Ends with one line: "harp: N passed, N failed".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/build.sh all mlir-doc

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
pytest=(/usr/bin/python3 -m pytest -q -p no:cacheprovider -n "$jobs")

set +e
lit_log=build/lit-results.txt
/usr/lib/llvm-22/bin/lit -sv build/test 2>&1 | tee "$lit_log"
lit_status=${PIPESTATUS[0]}
py_log=build/pytest-results.txt
"${pytest[@]}" test/Integration test/python 2>&1 | tee "$py_log"
py_status=${PIPESTATUS[0]}

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
for cpu in x86-64-v2 x86-64-v3 x86-64-v4; do
  if ! build/bin/harp-run --print-cpu --cpu "$cpu" | grep -qx "runs here: yes"; then
    compile_only+=("$cpu")
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
for variant in "32K,256K x86-64-v3" "48K,2M native"; do
  read -r caches cpu <<<"$variant"
  if ! build/bin/harp-run --print-cpu --cpu "$cpu" | grep -qx "runs here: yes"; then
    cpu=native
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
devices=(cuda-compile)
if /usr/bin/python3 -c 'import ctypes, sys
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

passed=$(( ${lit_passed:-0} + ${py_passed:-0} ))
failed=$(( lit_failed + ${py_failed:-0} + ${py_errors:-0} ))
echo "CPU: $(build/bin/harp-run --print-cpu | sed -n 's/^llvm cpu: //p') (native: $(build/bin/harp-run --print-cpu | sed -n 's/^vector bits: //p')-bit vectors)"
echo "CPU profiles and caches run (HARP_CPU, HARP_CACHES):"
if [ ${#profile_lines[@]} -gt 0 ]; then printf '%s\n' "${profile_lines[@]}"; fi
echo "CPU profiles compiled only: ${compile_only[*]:-none}"
echo "lit: ${lit_passed:-0} passed, $lit_failed failed; pytest: ${py_passed:-0} passed, $((py_failed + py_errors)) failed (GPU runs: ${devices[*]})"
echo "harp: $passed passed, $failed failed"
if [ "${lit_passed:-0}" -eq 0 ] || [ "${py_passed:-0}" -eq 0 ]; then
  echo "a test runner ran no test" >&2
  exit 1
fi
[ "$lit_status" -eq 0 ] && [ "$py_status" -eq 0 ] && [ "$extra_status" -eq 0 ]
