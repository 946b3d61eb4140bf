#!/usr/bin/env bash
# Sets up, builds everything, and runs every harp test: lit (dialect,
# conversions, C API, unit tests, fuzzing, examples) and pytest (programs
# executed through the JIT against NumPy, and the Python package against
# PyTorch, including the digits training example), then the op-family
# integration tests again with every module also compiled for the GPU down to
# cubin (HARP_TEST_DEVICE=cuda-compile: ptxas checks each kernel; no GPU
# needed) and, where a GPU answers, executed on it (HARP_TEST_DEVICE=cuda).
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

set +e
lit_log=build/lit-results.txt
/usr/lib/llvm-22/bin/lit -sv build/test 2>&1 | tee "$lit_log"
lit_status=${PIPESTATUS[0]}
py_log=build/pytest-results.txt
/usr/bin/python3 -m pytest -q -p no:cacheprovider test/Integration test/python 2>&1 | tee "$py_log"
py_status=${PIPESTATUS[0]}
families="test/Integration/CPU/test_map_reduce.py test/Integration/CPU/test_views.py
  test/Integration/CPU/test_data_movement.py test/Integration/CPU/test_gradients.py"
gpu_logs=()
gpu_status=0
devices=(cuda-compile)
if /usr/bin/python3 -c 'import ctypes, sys
lib = ctypes.CDLL("libcuda.so.1"); n = ctypes.c_int(0)
sys.exit(lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(n)) != 0 or n.value == 0)' 2>/dev/null; then
  devices+=(cuda)
fi
for device in "${devices[@]}"; do
  log="build/pytest-$device-results.txt"
  # shellcheck disable=SC2086
  HARP_TEST_DEVICE=$device /usr/bin/python3 -m pytest -q -p no:cacheprovider $families 2>&1 | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || gpu_status=1
  gpu_logs+=("$log")
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
for log in "$py_log" "${gpu_logs[@]}"; do
  py_passed=$(( py_passed + $(count "$log" passed || true) + 0 ))
  py_failed=$(( py_failed + $(count "$log" failed || true) + 0 ))
  py_errors=$(( py_errors + $(count "$log" error || true) + 0 ))
done

passed=$(( ${lit_passed:-0} + ${py_passed:-0} ))
failed=$(( lit_failed + ${py_failed:-0} + ${py_errors:-0} ))
echo "lit: ${lit_passed:-0} passed, $lit_failed failed; pytest: ${py_passed:-0} passed, $((py_failed + py_errors)) failed (GPU runs: ${devices[*]})"
echo "harp: $passed passed, $failed failed"
if [ "${lit_passed:-0}" -eq 0 ] || [ "${py_passed:-0}" -eq 0 ]; then
  echo "a test runner ran no test" >&2
  exit 1
fi
[ "$lit_status" -eq 0 ] && [ "$py_status" -eq 0 ] && [ "$gpu_status" -eq 0 ]
