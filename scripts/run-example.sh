#!/usr/bin/env bash
# The main job: set up, build, and run harp-opt's canonicalization pipeline on
# the example in examples/, printing the result.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/build.sh harp-opt >/dev/null
example=examples/conv2d-relu.mlir
echo "== $example, canonicalized (view chains composed, identity views dropped)"
build/bin/harp-opt "$example" --canonicalize --cse
