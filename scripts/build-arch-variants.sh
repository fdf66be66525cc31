#!/usr/bin/env bash
# Compiles attnscope (engine, GPU backend, app; not the tests) for the instruction sets a user's CPU may have,
# with warnings as errors, so that a warning only one of them raises (AVX-512 intrinsics, say) fails here and
# not on a user's machine. Compile only: nothing built here is run. Usage: scripts/build-arch-variants.sh [ARCH...]
set -euo pipefail
cd "$(dirname "$0")/.."
archs=("$@")
if [[ ${#archs[@]} -eq 0 ]]; then archs=(x86-64-v2 x86-64-v4); fi
for arch in "${archs[@]}"; do
  start=$SECONDS
  cmake -S . -B "build-arch/$arch" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_ARCH="$arch" \
    -DATTNSCOPE_WERROR=ON -DATTNSCOPE_BUILD_TESTS=OFF >/dev/null
  log="build-arch/$arch/build.log"
  cmake --build "build-arch/$arch" >"$log" 2>&1 || { cat "$log"; echo "build-arch-variants: -march=$arch failed" >&2; exit 1; }
  echo "build-arch-variants: -march=$arch compiled with -Werror in $((SECONDS - start)) s"
done
