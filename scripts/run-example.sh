#!/usr/bin/env bash
# The main job: set up, build, and train a two-layer MLP on the handwritten
# digits (examples/digits.py) with harp's Python API and its autodiff pass;
# prints the loss per epoch, the test accuracy and the time per step next to
# PyTorch. examples/mlp.py (harp-run on a .mlir file) is run by the tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/build.sh harp-python >/dev/null
export PYTHONPATH="$root/build/python${PYTHONPATH:+:$PYTHONPATH}"
/usr/bin/python3 examples/digits.py
