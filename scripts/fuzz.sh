#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer, every UB report fatal)
# into build-fuzz/ and runs each for a bounded time from a seed corpus. Exit 0 only with no crash, no
# sanitizer report, no escaped exception. Usage: scripts/fuzz.sh [SECONDS_EACH] (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
out=build-fuzz
mkdir -p "$out"
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -Iengine/include -Iengine/src -isystem /usr/include/eigen3 -DEIGEN_NO_DEBUG
       -Wall -Wextra -Werror)
# Each target with the engine sources it needs (no OpenMP, BLAS or GL: those are not on these paths).
declare -A sources=(
  [safetensors_header]="tests/fuzz/fuzz_safetensors_header.cpp engine/src/model/model_safetensors.cpp"
  [scene_json]="tests/fuzz/fuzz_scene_json.cpp engine/src/scene/scene_json.cpp engine/src/scene/scene.cpp engine/src/atomic_file.cpp build-fuzz/worked_example_json.cpp"
  [tokenizer_json]="tests/fuzz/fuzz_tokenizer_json.cpp engine/src/model/model_tokenizer.cpp engine/src/model/tokenizer_json.cpp engine/src/model/tokenizer_reader.cpp engine/src/model/tokenizer_normalize.cpp engine/src/model/tokenizer_pretokenize.cpp engine/src/model/tokenizer_regex.cpp engine/src/model/tokenizer_bpe.cpp engine/src/model/tokenizer_decode.cpp engine/src/atomic_file.cpp -licuuc -lonig"
)
# The worked example embedded as the engine's CMake does it.
cmake -DINPUT=assets/scenes/worked_example.json -DOUTPUT="$out/worked_example_json.cpp" -DSYMBOL=kWorkedExampleJson \
  -DNAMESPACE=attnscope -P engine/embed_text.cmake

# Seed corpora: tiny checkpoints in each dtype, and the project's scene files.
mkdir -p "$out/corpus/safetensors_header" "$out/corpus/scene_json"
for dtype in F32 F16 BF16; do
  if [[ ! -f "$out/corpus/safetensors_header/tiny_$dtype" ]]; then
    /usr/bin/python3 tests/model/gpt2_reference.py "$out/tiny_$dtype" --dtype "$dtype" --layers 1 --heads 2 --embd 8 \
      --positions 4 --tokens 2
    # Whole, valid files (about 12 KB), so that mutation starts from headers that pass.
    cp "$out/tiny_$dtype/model.safetensors" "$out/corpus/safetensors_header/tiny_$dtype"
  fi
done
cp assets/scenes/*.json "$out/corpus/scene_json/"
mkdir -p "$out/corpus/tokenizer_json" && cp tests/fuzz/tokenizer_json_seeds/*.json "$out/corpus/tokenizer_json/"

status=0
for target in safetensors_header scene_json tokenizer_json; do
  bin="$out/fuzz_$target"
  # shellcheck disable=SC2086
  clang++ "${flags[@]}" ${sources[$target]} -o "$bin"
  mkdir -p "$out/findings/$target"
  echo "fuzz: $target for ${seconds} s" >&2
  if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$out/findings/$target/" "$out/corpus/$target" >"$out/fuzz_$target.log" 2>&1; then
    tail -n 40 "$out/fuzz_$target.log" >&2
    echo "fuzz: $target found a failure (inputs in $out/findings/$target/)" >&2
    status=1
  else
    grep -E "^Done|#[0-9]+.*DONE" "$out/fuzz_$target.log" | tail -n 1 >&2 || true
  fi
done
exit $status
