#!/usr/bin/env bash
# The GPU checks, in one run on a machine with an NVIDIA GPU: unpacks a
# bundle from scripts/gpu-bundle.sh (or uses build/ when there is none),
# then runs, writing logs to $HARP_GPU_CHECK_OUT (default build/gpu-check):
#   1. the machine's facts (GPU, driver, Python, NumPy, PyTorch);
#   2. four programs on the CPU and on the GPU, compared: examples/mlp.mlir,
#      a row sum, and two large enough for the kernels' several elements per
#      thread (a partial last block, a split reduction's remainder);
#   3. the Python API on cuda (scripts/gpu-api-check.py);
#   4. bench/gpu.py with the MLP's training step (results-gpu.json), then its
#      memory-bound rows again with one element per thread
#      (results-gpu-one-per-thread.json): the same run's before and after;
#   5. the op-family suites with HARP_TEST_DEVICE=cuda, each failure logged
#      as it happens (scripts/pytest_failure_log.py).
#
#   scripts/gpu-check.sh [BUNDLE.tar.xz]
#   HARP_GPU_CHECK_WORKERS=16 HARP_GPU_CHECK_SUITE_S=420 HARP_GPU_CHECK_ONLY=suites
#   HARP_GPU_CHECK_K='reduc or hessian'   (pytest -k: a share of the suites)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$(realpath -m "${HARP_GPU_CHECK_OUT:-build/gpu-check}")"
mkdir -p "$out"
python="${HARP_GPU_CHECK_PYTHON:-python3}"
bin="$root/build/bin"
export PYTHONPATH="$root/build/python"
if [ -n "${1:-}" ]; then
  unpacked="$(mktemp -d)"
  tar -C "$unpacked" -xJf "$1" || { echo "gpu-check: cannot unpack $1"; exit 1; }
  bin="$unpacked/bin"
  export LD_LIBRARY_PATH="$unpacked/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PYTHONPATH="$unpacked/python"
  # bench/gpu.py runs build/bin/harp-bench.
  mkdir -p build/bin
  [ -e build/bin/harp-bench ] || ln -s "$bin/harp-bench" build/bin/harp-bench
fi
export HARP_RUN="$bin/harp-run" PYTHONUNBUFFERED=1
only="${HARP_GPU_CHECK_ONLY:-all}"
status=0

{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
  "$python" -c 'import sys, numpy, torch; print("Python", sys.version.split()[0], "NumPy", numpy.__version__, "PyTorch", torch.__version__)'
  lscpu | grep "Model name"
} 2>&1 | tee "$out/facts.txt"

if [ "$only" = all ]; then
  echo "== the CPU and the GPU on four programs"
  : >"$out/programs.txt"
  for program in examples/mlp.mlir test/Runtime/Inputs/row_sum.mlir \
    test/Runtime/Inputs/large_elementwise.mlir test/Runtime/Inputs/long_row_sum.mlir; do
    name="$(basename "$program" .mlir)"
    {
      "$HARP_RUN" "$program" --random-inputs 7 --no-disk-cache --output "$out/$name-cpu.npy" &&
        "$HARP_RUN" "$program" --random-inputs 7 --no-disk-cache --device cuda \
          --output "$out/$name-gpu.npy" &&
        "$python" -c "import numpy as np, sys
c, g = np.load('$out/$name-cpu.npy'), np.load('$out/$name-gpu.npy')
e = float(np.linalg.norm(c - g) / np.linalg.norm(c))
print('$name: relative difference %.3g' % e)
sys.exit(0 if c.shape == g.shape and e < 1e-5 else 1)"
    } >>"$out/programs.txt" 2>&1 || { status=1; echo "$name: FAILED" >>"$out/programs.txt"; }
  done
  cat "$out/programs.txt"
  echo "== the Python API on cuda"
  timeout 300 "$python" scripts/gpu-api-check.py 2>&1 | tee "$out/api.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "== bench/gpu.py"
  timeout "${HARP_GPU_CHECK_BENCH_S:-300}" "$python" bench/gpu.py --models mlp 2>&1 | tee "$out/bench.txt"
  cp bench/results-gpu.json "$out/" 2>/dev/null
  echo "== bench/gpu.py, memory-bound rows with one element per thread"
  timeout "${HARP_GPU_CHECK_BENCH_S:-300}" "$python" bench/gpu.py --elements-per-thread 1 \
    --only gelu,gelu1g,sum,sum1g,rowsum,softmax,layernorm 2>&1 | tee "$out/bench-one-per-thread.txt"
  cp bench/results-gpu.json "$out/results-gpu-one-per-thread.json" 2>/dev/null
fi

echo "== the op-family suites on the GPU"
rm -f "$out/outcomes.txt" "$out/failures.txt"
HARP_FAILURE_LOG_DIR="$out" PYTHONPATH="$root/scripts:$PYTHONPATH" HARP_TEST_DEVICE=cuda \
  timeout "${HARP_GPU_CHECK_SUITE_S:-1200}" "$python" -m pytest -q -p no:cacheprovider \
  -p pytest_failure_log -n "${HARP_GPU_CHECK_WORKERS:-$(nproc)}" -rf \
  ${HARP_GPU_CHECK_K:+-k "$HARP_GPU_CHECK_K"} \
  test/Integration/CPU/test_map_reduce.py test/Integration/CPU/test_views.py \
  test/Integration/CPU/test_data_movement.py test/Integration/CPU/test_gradients.py \
  >"$out/suites.txt" 2>&1
echo "suites: exit $? ($(grep -c '^passed' "$out/outcomes.txt" 2>/dev/null || echo 0) passed, $(grep -c '^failed' "$out/outcomes.txt" 2>/dev/null || echo 0) failed; failures in $out/failures.txt)"
grep -E "^(FAILED|ERROR)" "$out/suites.txt" | cut -c1-160 | head -40
tail -1 "$out/suites.txt"
grep -q "^failed" "$out/outcomes.txt" 2>/dev/null && status=1
exit $status
