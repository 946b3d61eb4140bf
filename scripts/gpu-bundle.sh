#!/usr/bin/env bash
# Packs what running harp on a GPU machine needs into one archive, for a
# machine with an NVIDIA driver and CUDA toolkit but without Debian's LLVM 22:
# harp-run, harp-bench (stripped), the libraries they load that such a
# machine may lack (libLLVM and its own, libomp for --parallel), and the
# Python package. scripts/gpu-check.sh unpacks it and runs the GPU checks.
#
#   scripts/gpu-bundle.sh [OUT.tar.xz]            (default build/gpu-bundle.tar.xz)
#   HARP_BUNDLE_PYTHON_INCLUDE=/path/include/python3.12 scripts/gpu-bundle.sh
#
# The Python module is built for /usr/bin/python3 (3.11); with
# HARP_BUNDLE_PYTHON_INCLUDE its sources are compiled again against another
# CPython's headers and linked the same way, for a machine whose Python is
# another version. ICU's 30 MB data library is replaced by a stub: libxml2
# (which libLLVM links) loads ICU, but harp converts no text encodings.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$(realpath -m "${1:-build/gpu-bundle.tar.xz}")"
scripts/build.sh harp-run harp-bench _harp >/dev/null

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/python"
strip -o "$stage/bin/harp-run" build/bin/harp-run
strip -o "$stage/bin/harp-bench" build/bin/harp-bench
cp -r build/python/harp "$stage/python/"

module=build/python/harp/_harp.cpython-311-x86_64-linux-gnu.so
if [ -n "${HARP_BUNDLE_PYTHON_INCLUDE:-}" ]; then
  include="$HARP_BUNDLE_PYTHON_INCLUDE"
  version="$(basename "$include" | sed 's/^python//; s/\.//')"
  objects="$stage/objects"
  mkdir -p "$objects"
  # The module's compile commands with the other headers, then its link
  # command with those objects.
  /usr/bin/python3 - "$include" "$objects" >"$stage/compile.sh" <<'PY'
import json, sys
include, objects = sys.argv[1:]
for entry in json.load(open("build/compile_commands.json")):
    if "/python/" not in entry["file"] or not entry["file"].endswith(".cpp"):
        continue
    name = entry["file"].rsplit("/", 1)[1]
    command = entry["command"].replace("-isystem /usr/include/python3.11",
                                       "-isystem " + include)
    command = command.replace("-o python/CMakeFiles/_harp.dir/%s.o" % name,
                              "-o %s/%s.o" % (objects, name))
    print("cd build && " + command)
PY
  xargs -P"${HARP_JOBS:-2}" -I{} bash -c '{}' <"$stage/compile.sh"
  link="$(cd build && ninja -t commands "python/harp/$(basename $module)" | tail -1)"
  link="${link//python\/CMakeFiles\/_harp.dir\//$objects/}"
  # (the command also strips the module, by its absolute path)
  link="${link//$root\/build\/python\/harp\/$(basename $module)/$stage/_harp.so}"
  link="${link//python\/harp\/$(basename $module)/$stage/_harp.so}"
  (cd build && eval "$link")
  strip -o "$stage/python/harp/_harp.cpython-$version-x86_64-linux-gnu.so" "$stage/_harp.so"
  rm -f "$stage/python/harp/$(basename $module)" "$stage/_harp.so"
  rm -rf "$objects" "$stage/compile.sh"
else
  strip "$stage/python/harp/$(basename $module)"
fi

# Every library the binaries and the module load, but the C and C++
# runtimes (a newer system has newer ones).
ldd build/bin/harp-run build/bin/harp-bench "$module" |
  awk '/=>/ { print $1, $3 }' | sort -u |
  grep -v -E '^(libc|libm|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt)\.' |
  while read -r name path; do cp -L "$path" "$stage/lib/$name"; done
cp -L "$(/sbin/ldconfig -p | awk '/libomp\.so\.5 / { print $NF; exit }')" "$stage/lib/libomp.so.5"
if [ -f "$stage/lib/libicudata.so.72" ]; then
  printf 'const char icudt72_dat[64] __attribute__((aligned(16))) = {0};\n' >"$stage/icu.c"
  gcc -shared -fPIC -O2 -Wl,-soname,libicudata.so.72 -o "$stage/lib/libicudata.so.72" "$stage/icu.c"
  rm "$stage/icu.c"
fi
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - bin lib python | xz -9e -T"${HARP_JOBS:-2}" >"$out"
echo "$out: $(du -h "$out" | cut -f1)"
