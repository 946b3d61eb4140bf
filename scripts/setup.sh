#!/usr/bin/env bash
# Installs every Debian package harp needs to build and test. Idempotent and
# quiet when everything is present; runs `apt-get update` only when something
# is missing.
set -euo pipefail

PACKAGES=(
  cmake ninja-build ccache lld g++ git
  gcc binutils  # cc links the libraries harp-compile writes; nm, readelf test them
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  python3 python3-dev python3-numpy python3-pytest python3-pytest-xdist
  python3-hypothesis pybind11-dev python3-torch
  python3-sklearn python3-matplotlib libopenblas0-pthread libomp5-14
  libgtest-dev
  openmpi-bin libopenmpi-dev python3-mpi4py  # harp.distributed, its tests and bench
  base-files  # the corpus of examples/char_transformer.py (common-licenses/GPL-3)
  graphviz  # `dot`, which the DOT export test renders with
  libdlpack-dev  # dlpack.h: Tensor.__dlpack__ and harp.from_dlpack
  nlohmann-json3-dev  # the JSON header of safetensors files
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
      grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}" \
  >/dev/null
echo "setup: done"
