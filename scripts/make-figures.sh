#!/usr/bin/env bash
# Remakes the README's pictures from the app itself, so they follow the window when it changes:
#   docs/images/window.png  the window (1280 x 800, under its own Xvfb, driven by the scripted mode) on
#                           assets/scenes/sentence_heads.json, the Similarity tab open, the induction head hovered
#   docs/images/heads.png   `attnscope export --what heads` of the same scene
#   docs/images/tiny_model.png  the window on the model that ships (the Checkpoint tab's Try the tiny trained model):
#                           its attention grid on 20 random tokens twice, Find heads' induction map lighting one head
# Usage: scripts/make-figures.sh [ATTNSCOPE]   (default build/app/attnscope: scripts/build.sh --target attnscope)
set -euo pipefail
cd "$(dirname "$0")/.."
app=${1:-build/app/attnscope}
scene=assets/scenes/sentence_heads.json
out=docs/images
mkdir -p "$out"
work=$(mktemp -d)
xvfb_pid=""
cleanup() {
  if [[ -n "$xvfb_pid" ]]; then kill "$xvfb_pid" 2>/dev/null || true; wait "$xvfb_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A free display: no lock file and no socket (Xvfb refuses a taken one, so try the next).
for display in $(seq 200 400); do
  [[ -e /tmp/.X$display-lock || -e /tmp/.X11-unix/X$display ]] && continue
  Xvfb ":$display" -screen 0 1280x800x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
  xvfb_pid=$!
  for _ in $(seq 50); do [[ -e /tmp/.X11-unix/X$display ]] && break; sleep 0.1; done
  if [[ -e /tmp/.X11-unix/X$display ]] && kill -0 "$xvfb_pid" 2>/dev/null; then break; fi
  xvfb_pid=""
done
[[ -n "$xvfb_pid" ]] || { echo "make-figures: could not start Xvfb" >&2; exit 1; }

# Head 3 (the induction head), query "cat" at position 8 over key "sat" at 2: the word after the earlier "cat".
cat >"$work/window.txt" <<SCRIPT
wait 3
click tab.similarity
wait 2
move cell 2 8 2
wait 2
screenshot $work/window.png
quit
SCRIPT
DISPLAY=:$display "$app" --backend cpu --scene "$scene" --script "$work/window.txt"
cp "$work/window.png" "$out/window.png"
"$app" export "$scene" --what heads --out "$out/heads.png"
# The tiny trained model, from the Checkpoint tab's preset: its grid and Find heads' induction map.
cat >"$work/tiny.txt" <<SCRIPT
wait 3
click tab.checkpoint
wait 2
click checkpoint.tiny
until model.tile.1.3
until no model.grid_pending
until findheads.map
wait 2
screenshot $work/tiny.png
quit
SCRIPT
DISPLAY=:$display "$app" --backend cpu --script "$work/tiny.txt"
cp "$work/tiny.png" "$out/tiny_model.png"
echo "make-figures: wrote $out/window.png, $out/heads.png and $out/tiny_model.png"
