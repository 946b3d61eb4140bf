#!/usr/bin/env bash
# The main job: set up, build, and train a small CNN (conv, batch norm,
# pooling, dropout) on the handwritten digits (examples/cnn_digits.py) with
# harp.nn, harp.optim and the autodiff pass; shows a progress bar per epoch,
# the test accuracy (exits non-zero below 98%) and the time per step next to
# PyTorch, and writes the loss and accuracy curves to examples/out/*.png.
# examples/digits.py (an MLP) and examples/mlp.py (harp-run on a .mlir
# file) are run by the tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/build.sh harp-python >/dev/null
export PYTHONPATH="$root/build/python${PYTHONPATH:+:$PYTHONPATH}"
/usr/bin/python3 examples/cnn_digits.py --min-accuracy 0.98 "$@"
