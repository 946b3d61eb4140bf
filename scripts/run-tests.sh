#!/usr/bin/env bash
# Sets up, builds everything, and runs every harp test: lit (dialect,
# conversions, C API, unit tests, fuzzing, examples) and pytest (programs
# executed through the JIT against NumPy, and the Python package against
# PyTorch, including the digits training example). Ends with one line:
# "harp: N passed, N failed".
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
set -e

lit_passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$lit_log" | tail -1)
lit_failed=0
for kind in Failed Unresolved "Timed Out" XPASS; do
  n=$(sed -n "s/^ *$kind *: *\([0-9]*\).*/\1/p" "$lit_log" | tail -1)
  lit_failed=$((lit_failed + ${n:-0}))
done
py_passed=$(count "$py_log" passed)
py_failed=$(( $(count "$py_log" failed || true) + 0 ))
py_errors=$(( $(count "$py_log" error || true) + 0 ))

passed=$(( ${lit_passed:-0} + ${py_passed:-0} ))
failed=$(( lit_failed + ${py_failed:-0} + ${py_errors:-0} ))
echo "lit: ${lit_passed:-0} passed, $lit_failed failed; pytest: ${py_passed:-0} passed, $((py_failed + py_errors)) failed"
echo "harp: $passed passed, $failed failed"
if [ "${lit_passed:-0}" -eq 0 ] || [ "${py_passed:-0}" -eq 0 ]; then
  echo "a test runner ran no test" >&2
  exit 1
fi
[ "$lit_status" -eq 0 ] && [ "$py_status" -eq 0 ]
