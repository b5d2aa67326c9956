#!/bin/sh
# A real library nobody here wrote: Debian's librocrand1 (HIP kernels for 7
# AMD targets in .hip_fatbin). Downloads the .deb (or takes $LRRT_ROCRAND_DEB),
# unpacks it, and compares `lrrt inspect` on librocrand.so.1 with
# clang-offload-bundler --list and llvm-readelf-19 --notes on every entry
# (tests/hsa/compare_readelf.py). Offline: exit 77, which ctest reports as
# skipped, saying why.
# usage: rocrand_vs_readelf.sh LRRT LLVM_READELF
set -u
LRRT=$1
READELF=$2
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
DEB=${LRRT_ROCRAND_DEB:-}
if [ -z "$DEB" ]; then
  if ! (cd "$WORK" && timeout 120 apt-get download librocrand1 > "$WORK/download.log" 2>&1); then
    echo "skipped: cannot download librocrand1 (offline?): $(tail -n 1 "$WORK/download.log")"
    exit 77
  fi
  DEB=$(ls "$WORK"/librocrand1_*.deb | head -1)
fi
dpkg-deb -x "$DEB" "$WORK/root" || exit 1
LIB=$(find "$WORK/root" -name 'librocrand.so.1*' -type f | head -1)
[ -n "$LIB" ] || { echo "no librocrand.so.1 in $DEB"; exit 1; }
echo "$(basename "$DEB"): $LIB"
exec python3 "$HERE/../hsa/compare_readelf.py" "$LRRT" "$READELF" "$LIB"
