#!/usr/bin/env bash
# Times the window on a random long scene (issue 16's window goals): from the edit that makes the scene, when
# its result lands (the flash forward: output, m, l) and when each head's max-pooled overview lands, then the
# frame times of a pan at deep zoom. Runs under its own Xvfb on the CPU backend. Usage:
#   scripts/measure-long-window.sh ATTNSCOPE OUT_DIR [N] [HEADS] [D_MODEL]
# Prints the ATTNSCOPE_TILE_LOG lines with seconds since the edit in front, and --frame-stats of the pan.
set -euo pipefail
app=$1 out=$2 n=${3:-32768} heads=${4:-8} d_model=${5:-512}
mkdir -p "$out"
cat >"$out/script.txt" <<SCRIPT
wait 3
click model.random.n
key A ctrl
text $n
key Enter
click model.random.heads
key A ctrl
text $heads
key Enter
click model.random.d_model
key A ctrl
text $d_model
key Enter
wait 2
click model.preset.random
wait 3
until no status.computing 10000000
until no heads.overviews 10000000
screenshot $out/overviews.png
click head0.map
wait 3
wheel head0.map 40
until no heads.view_pending 100000
wait 5
measure
drag head0.map 200 120 60
wait 5
screenshot $out/panned.png
quit
SCRIPT
display=$((600 + RANDOM % 300))
Xvfb ":$display" -screen 0 1280x800x24 -nolisten tcp >"$out/xvfb.log" 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true' EXIT
sleep 1
echo "load before: $(cat /proc/loadavg)"
start=$(date +%s.%N)
DISPLAY=":$display" LIBGL_ALWAYS_SOFTWARE=1 ATTNSCOPE_TILE_LOG=1 "$app" --backend cpu --frame-stats \
  --script "$out/script.txt" </dev/null 2>&1 | while IFS= read -r line; do
  printf '%8.1f s  %s\n' "$(echo "$(date +%s.%N) - $start" | bc)" "$line"
done
echo "load after: $(cat /proc/loadavg)"
