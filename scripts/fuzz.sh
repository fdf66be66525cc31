#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer, every UB report fatal)
# into build-fuzz/ and runs each for a bounded time from a seed corpus, with a dictionary of JSON tokens, deep
# nesting and huge numbers (tests/fuzz/json.dict) and hostile seeds made here (never committed). Exit 0 only
# with no crash, no sanitizer report, no escaped exception, no unbounded message.
# Usage: scripts/fuzz.sh [SECONDS_EACH] (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
# The most one input may take (libFuzzer's -timeout): past it, a finding. The tokenizer's seeds include
# growing normalizers and catastrophic regexes, which must be refused well within it.
per_input=10
out=build-fuzz
mkdir -p "$out"
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -Iengine/include -Iengine/src -isystem /usr/include/eigen3 -DEIGEN_NO_DEBUG
       -Wall -Wextra -Werror)
# Each target with the engine sources it needs (no OpenMP, BLAS or GL: those are not on these paths).
common="engine/src/json_file.cpp engine/src/text_bounds.cpp engine/src/atomic_file.cpp engine/src/pending_temporaries.cpp
        engine/src/settings.cpp"
# The tokenizer pipeline (GPT-2's vocab.json + merges.txt and tokenizer.json alike), with ICU and Oniguruma.
tokenizer="engine/src/model/model_tokenizer.cpp engine/src/model/tokenizer_json.cpp engine/src/model/tokenizer_reader.cpp
           engine/src/model/tokenizer_normalize.cpp engine/src/model/tokenizer_pretokenize.cpp
           engine/src/model/tokenizer_regex.cpp engine/src/model/tokenizer_bpe.cpp engine/src/model/tokenizer_decode.cpp"
model="engine/src/model/model_checkpoint.cpp engine/src/model/model_safetensors.cpp $tokenizer engine/src/scene/scene.cpp
       engine/src/scene/key_mask.cpp engine/src/compute/rope.cpp engine/src/model/arch/loader.cpp
       engine/src/model/arch/tensor_names.cpp engine/src/model/arch/families.cpp
       $(ls engine/src/model/arch/configs/*.cpp | tr '\n' ' ')"
declare -A sources=(
  [safetensors_header]="tests/fuzz/fuzz_safetensors_header.cpp engine/src/model/model_safetensors.cpp $common"
  [scene_json]="tests/fuzz/fuzz_scene_json.cpp engine/src/scene/scene_json.cpp engine/src/scene/scene.cpp engine/src/scene/key_mask.cpp $common build-fuzz/worked_example_json.cpp"
  [config_json]="tests/fuzz/fuzz_config_json.cpp $model $common"
  [vocab_merges]="tests/fuzz/fuzz_vocab_merges.cpp $model $common"
  [tokenizer_json]="tests/fuzz/fuzz_tokenizer_json.cpp $tokenizer engine/src/scene/scene.cpp engine/src/scene/key_mask.cpp $common"
  [array_file]="tests/fuzz/fuzz_array_file.cpp engine/src/arrays/array_file.cpp engine/src/model/model_safetensors.cpp
                engine/src/scene/scene.cpp engine/src/scene/key_mask.cpp $common"
)
targets=(safetensors_header scene_json config_json vocab_merges tokenizer_json array_file)
# FUZZ_TARGETS="array_file scene_json" runs only those (a quick check of one reader).
if [[ -n "${FUZZ_TARGETS:-}" ]]; then read -r -a targets <<<"$FUZZ_TARGETS"; fi
# The worked example embedded as the engine's CMake does it.
cmake -DINPUT=assets/scenes/worked_example.json -DOUTPUT="$out/worked_example_json.cpp" -DSYMBOL=kWorkedExampleJson \
  -DNAMESPACE=attnscope -P engine/embed_text.cmake

# Seed corpora: tiny checkpoints in each dtype, their config, vocab and merges, the project's scene files, and
# hostile seeds: deep nesting (past the limit, and just under it), a long string, a 10,000-digit number.
for target in safetensors_header scene_json config_json vocab_merges tokenizer_json array_file; do
  mkdir -p "$out/corpus/$target"
done
for dtype in F32 F16 BF16; do
  if [[ ! -f "$out/corpus/safetensors_header/tiny_$dtype" ]]; then
    /usr/bin/python3 tests/model/gpt2_reference.py "$out/tiny_$dtype" --dtype "$dtype" --layers 1 --heads 2 --embd 8 \
      --positions 4 --tokens 2
    # Whole, valid files (about 12 KB), so that mutation starts from headers that pass.
    cp "$out/tiny_$dtype/model.safetensors" "$out/corpus/safetensors_header/tiny_$dtype"
  fi
done
cp assets/scenes/*.json "$out/corpus/scene_json/"
cp "$out/tiny_F32/config.json" "$out/corpus/config_json/config.json"
{ cat "$out/tiny_F32/vocab.json"; printf '\0'; cat "$out/tiny_F32/merges.txt"; } >"$out/corpus/vocab_merges/tiny"
/usr/bin/python3 - "$out/corpus" <<'PY'
import sys
corpus = sys.argv[1]
deep = "[" * 70 + "]" * 70
hostile = {
    "deep": "[" * 5000, "deep_ok": "[" * 64 + "]" * 64, "deep_object": '{"a":' * 70 + "1" + "}" * 70,
    "long_string": '"' + "x" * 20000, "huge_number": "[" + "9" * 10000 + "]", "tiny_number": "[0." + "0" * 5000 + "1]",
    "bad_utf8": '["\xff\xfe"]',
}
for target in ("scene_json", "config_json", "tokenizer_json"):
    for name, text in hostile.items():
        open(f"{corpus}/{target}/{name}", "wb").write(text.encode("latin-1"))
open(f"{corpus}/scene_json/deep_description", "w").write(
    '{"format": "attnscope-scene", "version": 1, "description": ' + deep + "}")
for name, text in hostile.items():  # as a safetensors header: 8-byte length, then the text
    body = text.encode("latin-1")
    open(f"{corpus}/safetensors_header/{name}", "wb").write(len(body).to_bytes(8, "little") + body)
    open(f"{corpus}/vocab_merges/{name}", "wb").write(body + b"\0a b\n")
PY

mkdir -p "$out/corpus/tokenizer_json" && cp tests/fuzz/tokenizer_json_seeds/*.json "$out/corpus/tokenizer_json/"

# The array reader's seeds (the first byte picks .npy (even) or .npz (odd)): NumPy's own files in each dtype and
# order, np.savez archives (one with an int64 entry), and the hostile shapes of issue 29 (products that wrap).
/usr/bin/python3 - "$out/corpus/array_file" <<'PY'
import io, sys, numpy as np
corpus = sys.argv[1]
def npy(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()
def npz(**arrays):
    b = io.BytesIO(); np.savez(b, **arrays); return b.getvalue()
def raw(shape, data, descr="<f4"):
    header = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)).encode()
    header += b" " * ((-(10 + len(header) + 1)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data
w = np.full((2, 3, 3), 1 / 3)
seeds = {
    "f4": npy(w.astype("<f4")), "f8": npy(w), "f2": npy(w.astype("<f2")), "i8": npy(np.arange(6).reshape(2, 3)),
    "fortran": npy(np.asfortranarray(w[0].astype("<f4"))), "big_endian": npy(w.astype(">f4")),
    "scalar": npy(np.float32(1)),
    "wrap3": raw("(3, 6148914691236517206, 64, 64)", bytes(32768)), "wrap4": raw("(4, 4611686018427387905, 1, 1)", bytes(16)),
    "huge2": raw("(2147483648, 8589934592, 1, 1)", b""), "huge_zero": raw("(0, 4611686018427387904)", b""),
    "int_max": raw("(2147483647, 2147483647, 2, 2)", bytes(16)),
}
for name, data in seeds.items():
    open(f"{corpus}/npy_{name}", "wb").write(b"\0" + data)
open(f"{corpus}/npz_two", "wb").write(b"\1" + npz(attn=w.astype("<f4"), input_ids=np.arange(3)))
open(f"{corpus}/npz_one", "wb").write(b"\1" + npz(x=w[0]))
PY

# Each source compiled once (a source several targets share, once for all), $(nproc) at a time, then each target
# linked from its objects: the same objects whatever the target, as the flags are the same.
mkdir -p "$out/obj"
object_of() { local o="${1//\//_}"; echo "$out/obj/${o%.cpp}.o"; }
declare -A unique=()
for target in "${targets[@]}"; do for src in ${sources[$target]}; do unique[$src]=1; done; done
export -f object_of
export out
printf '%s\n' "${!unique[@]}" | xargs -P "$(nproc)" -I{} bash -c \
  'clang++ "$@" -c {} -o "$(object_of {})" || { echo "fuzz: {} did not compile" >&2; exit 255; }' _ "${flags[@]}"
for target in "${targets[@]}"; do
  objects=()
  for src in ${sources[$target]}; do objects+=("$(object_of "$src")"); done
  clang++ "${flags[@]}" "${objects[@]}" -licuuc -lonig -o "$out/fuzz_$target"
  mkdir -p "$out/findings/$target"
done

# The targets run $(nproc) at a time (each fuzzer is one process on one core), each for its own $seconds.
run_one() {
  local target=$1 bin="$out/fuzz_$1"
  echo "fuzz: $target for ${seconds} s" >&2
  if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      "$bin" -max_total_time="$seconds" -timeout="$per_input" -rss_limit_mb=2048 -max_len=65536 -dict=tests/fuzz/json.dict \
      -artifact_prefix="$out/findings/$target/" "$out/corpus/$target" >"$out/fuzz_$target.log" 2>&1; then
    tail -n 40 "$out/fuzz_$target.log" >&2
    echo "fuzz: $target found a failure (inputs in $out/findings/$target/)" >&2
    return 1
  fi
  grep -E "^Done|#[0-9]+.*DONE" "$out/fuzz_$target.log" | tail -n 1 | sed "s/^/fuzz: $target: /" >&2 || true
}
export -f run_one
export seconds per_input
printf '%s\n' "${targets[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_one {}'
