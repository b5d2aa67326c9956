#!/usr/bin/env bash
# tests/fuzz/seeds.sh TARGET REPO BUILD_DIR
# Prints the seed-corpus folders of a fuzz target: the repository's own files of
# that kind, gathered into BUILD_DIR/seeds/TARGET, plus its regression inputs.
set -euo pipefail
target=$1 repo=$2 build=$3
seeds=$build/seeds/$target
rm -rf "$seeds"
mkdir -p "$seeds"
case $target in
  manifest)
    cp "$repo"/manifests/*.json "$seeds"/
    ;;
  npy)
    # Small files numpy wrote (tests/fuzz/seeds/npy): every dtype family,
    # scalar, empty and multi-dimensional shapes.
    cp "$repo"/tests/fuzz/seeds/npy/*.npy "$seeds"/
    ;;
  results)
    # The small result files only: the long ones slow every execution.
    find "$repo/docs/results" -name '*.json' -size -200k -exec cp {} "$seeds"/ \;
    ;;
  code_object)
    # One small code object per format (tests/fuzz/seeds/code_object): HSACO,
    # offload bundle (plain and compressed), cubin, fatbin (plain, zstd and
    # LZ4 entries), PTX, stripped host kernel library, host library with a
    # .hip_fatbin.
    cp "$repo"/tests/fuzz/seeds/code_object/* "$seeds"/
    ;;
  triton_ir)
    # Every committed Triton IR: the entries and the access analysis's fixtures.
    find "$repo/tests/triton" -name '*.ttir' | while read -r f; do
      cp "$f" "$seeds/$(echo "${f#$repo/tests/triton/}" | tr / _)"
    done
    ;;
esac
echo -n "$seeds"
if [[ -d $repo/tests/fuzz/regressions/$target ]]; then echo -n " $repo/tests/fuzz/regressions/$target"; fi
echo
