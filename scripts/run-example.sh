#!/usr/bin/env bash
# The main job: set up, build, and run a two-layer network's forward pass
# (examples/mlp.mlir) through harp-run, checked against NumPy.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/build.sh harp-opt harp-run >/dev/null
/usr/bin/python3 examples/mlp.py
