#!/usr/bin/env bash
# Sets up, builds everything, and runs every harp test (lit: dialect, passes,
# C API, fuzzing). Ends with one line: "N passed, N failed".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/build.sh all mlir-doc

log="build/test-results.txt"
set +e
/usr/lib/llvm-22/bin/lit -sv build/test 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
failed=0
for kind in Failed Unresolved "Timed Out" XPASS; do
  n=$(sed -n "s/^ *$kind *: *\([0-9]*\).*/\1/p" "$log" | tail -1)
  failed=$((failed + ${n:-0}))
done
echo "harp: ${passed:-0} passed, ${failed} failed"
if [ "${passed:-0}" -eq 0 ]; then
  echo "no test ran" >&2
  exit 1
fi
exit "$status"
