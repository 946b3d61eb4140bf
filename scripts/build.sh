#!/usr/bin/env bash
# Sets up the machine (scripts/setup.sh), configures build/ once and builds
# harp with Ninja, lld and ccache. Extra arguments are Ninja targets.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scripts/setup.sh

jobs="${HARP_JOBS:-2}"
mkdir -p build
if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_USE_LINKER=lld \
    -DPython3_EXECUTABLE=/usr/bin/python3 >build/cmake.log 2>&1 ||
    { cat build/cmake.log; exit 1; }
fi
ninja -C build -j"$jobs" "$@"
