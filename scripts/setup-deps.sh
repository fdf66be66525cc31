#!/usr/bin/env bash
# Installs every Debian package attnscope needs to build, test and open its window.
# Idempotent: when all packages are present it does nothing (no apt-get update, no network).
set -euo pipefail

packages=(
  build-essential cmake pkg-config ninja-build
  libeigen3-dev libopenblas-openmp-dev nlohmann-json3-dev libstb-dev
  libglfw3-dev libimgui-dev libepoxy-dev libegl-dev libgl-dev
  libegl-mesa0 libgl1-mesa-dri libglx-mesa0
  libgtest-dev libgmock-dev libbenchmark-dev
  xvfb xauth xdotool x11-utils fonts-dejavu-core
  python3 python3-numpy
  libicu-dev libonig-dev
)
# libicu-dev: Unicode character classes and normalisation (NFC, NFKC) for the tokenizers; libonig-dev:
# Oniguruma, the regex engine of Hugging Face `tokenizers`, for the pre-tokenizers' patterns.
# `setup-deps.sh --test` (scripts/test.sh) adds what only the tests need: nodejs (+ npm) and openssl for the
# tokenizer's peer (scripts/fetch-gpt2-vocab.sh); clang + libclang-rt-14-dev for libFuzzer with ASan/UBSan
# (scripts/fuzz.sh); python3-torch for the import test's own nn.MultiheadAttention (tests/cli/test_import_cli.cpp,
# which fails under CI=true without it); librsvg2-bin, imagemagick (+ libmagickcore-6.q16-6-extra, its own MSVG
# renderer) and chromium to draw the SVG export as authors' tools do (tests/export/test_svg_renderers.cpp, which
# fails under CI=true without them). npm is Debian's own package only where no npm came with nodejs (NodeSource's nodejs
# provides npm and conflicts with Debian's).
if [[ "${1:-}" == "--test" ]]; then
  packages+=(nodejs openssl clang libclang-rt-14-dev python3-torch)
  packages+=(librsvg2-bin imagemagick libmagickcore-6.q16-6-extra chromium)
  if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
fi
# Extra packages for ../shared/tools/peer-bench (PyTorch and a threaded BLAS): `setup-deps.sh --bench`.
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch libopenblas0-pthread)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "setup-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
