#!/usr/bin/env bash
# Compiles attnscope's own code (engine, GPU backend, app; not the tests) for a fixed list of instruction sets,
# with warnings as errors, so that a warning only one CPU's -march raises (AVX-512 intrinsics inlined through
# Eigen, say) fails here, on every machine alike, and not on a user's or on the one CI machine of that kind.
# The list is the same everywhere (never `native`), so a red run reproduces anywhere: the build whose tests run
# (scripts/build.sh, native) shows its warnings and does not fail on them.
#
# Compile only: nothing built here is run. Each variant is the build a user gets: a unity build (ATTNSCOPE_UNITY,
# the default: up to 40 sources a translation unit, Eigen read and instantiated once a batch), so that five targets
# take about 11 minutes of CI's 40 rather than 45 source by source. --per-source compiles as
# -DATTNSCOPE_UNITY=OFF does (about 9 minutes a target here): what GCC inlines differs between the two, and with it
# a warning that depends on inlining (GCC 12's false -Wuninitialized inside its AVX-512 intrinsics, bug 105593,
# quieted in attnscope/eigen.h, showed under rocketlake in pooled_max.cpp compiled alone, not in a batch).
# Usage: scripts/build-arch-variants.sh [--per-source] [ARCH...]   (default: the fixed list below)
set -euo pipefail
cd "$(dirname "$0")/.."
# x86-64: the baseline (SSE2), what ATTNSCOPE_ARCH=portable and a distribution's package compile. Then the server
# and desktop CPUs users and CI machines have, AVX2 + FMA (znver3) and AVX-512 of three kinds; their tuning changes
# GCC's inlining and with it the warnings (rocketlake raises GCC bug 105593 as -Wuninitialized where the generic
# x86-64-v4 raises nothing). The generic levels x86-64-v3 and -v4 add no instructions these lack, so they are not
# compiled. znver4 where the compiler knows it (GCC 13 on): Debian 12's GCC 12 has none, so every Debian 12
# machine compiles the same five.
unity=(-DATTNSCOPE_UNITY=ON)
if [[ "${1:-}" == "--per-source" ]]; then unity=(-DATTNSCOPE_UNITY=OFF); shift; fi
archs=("$@")
if [[ ${#archs[@]} -eq 0 ]]; then
  archs=(x86-64 znver3 icelake-server sapphirerapids rocketlake)
  if c++ -march=znver4 -E -x c++ /dev/null -o /dev/null 2>/dev/null; then archs+=(znver4); fi
fi
echo "build-arch-variants: engine, GPU backend and app with -Werror for: ${archs[*]}"

# One variant: configure, compile, and one line with its time; on a failure its errors and exit 1.
variant() {
  local arch=$1 start=$SECONDS dir="build-arch/$1"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNSCOPE_ARCH="$arch" -DATTNSCOPE_WERROR=ON \
    -DATTNSCOPE_BUILD_TESTS=OFF "${unity[@]}" >/dev/null
  # -k 0: every failing batch reported in one run, not the first alone.
  if ! cmake --build "$dir" -- -k 0 -j "$jobs" >"$dir/build.log" 2>&1; then
    grep -E "error|warning" "$dir/build.log" | head -40
    echo "build-arch-variants: -march=$arch failed (all of it: $dir/build.log)" >&2
    return 1
  fi
  echo "build-arch-variants: -march=$arch compiled with -Werror in $((SECONDS - start)) s"
}
# One variant at a time, a job a core: two at a time measured worse here (294 and 322 s for a pair, 161 s a
# variant, where one alone took 132 s).
jobs=$(nproc)
export -f variant
export jobs
unity_flags="${unity[*]}"
export unity_flags
printf '%s\n' "${archs[@]}" | xargs -P 1 -I{} bash -c 'unity=($unity_flags); variant {}'
