#!/usr/bin/env bash
# One GUI test: starts Xvfb on a free display, runs the window with scripts/NAME.txt (where @OUT@ becomes the
# artifact folder), then checks the screenshots with gui_check. Usage:
#   run_gui_test.sh NAME ATTNSCOPE GUI_CHECK SCRIPTS_DIR ARTIFACTS_DIR [BACKEND]
set -euo pipefail
name=$1 app=$2 check=$3 scripts=$4 artifacts=$5 backend=${6:-auto}
out="$artifacts/${name}_$backend"
# NAME_x2: scripts/NAME.txt at ATTNSCOPE_UI_SCALE=2 on a 2560 x 1600 screen (a HiDPI monitor: the same layout
# as 1280 x 800 at scale 1). "workarea": scale 2 on a 1280 x 800 screen, where the window must stay inside it.
script=$name screen=1280x800 scale=""
if [[ "$name" == *_x2 ]]; then script=${name%_x2} screen=2560x1600 scale=2; fi
if [[ "$name" == workarea ]]; then scale=2; fi
# model_grid_ondemand: scripts/model_grid.txt and its fixture with no maps kept (ATTNSCOPE_MODEL_MAPS=drop): the
# grid's tiles recomputed from Q and K on the grid's worker, checked against the same NumPy maps.
maps="" check_name=$script
if [[ "$name" == model_grid_ondemand ]]; then script=model_grid maps=drop check_name=$name; fi
# model_phi3, model_olmo2, model_mixtral: the Llama test's script and checks on that family's checkpoint (same
# shape: 3 layers x 8 query heads in 4 KV groups), written with NumPy's maps by llama_kin_reference.py.
if [[ "$name" == model_phi3 || "$name" == model_olmo2 || "$name" == model_mixtral ]]; then
  script=model_llama check_name=model_llama kin_family=${name#model_}
fi
# model_gemma: the same on a Gemma checkpoint ((1 + w) norms, scaled embeddings, GeGLU), gemma_reference.py's maps.
if [[ "$name" == model_gemma ]]; then script=model_llama check_name=model_llama gemma=1; fi
# model_gemma2: a soft-capped Gemma 2 (3 layers x 4 heads in 2 KV groups, soft cap 3), whose layers do not open
# as scenes.
if [[ "$name" == model_gemma2 ]]; then gemma2=1; fi
rm -rf "$out" && mkdir -p "$out"
# The panes' widths are remembered in the user's config directory: each test has its own, empty at the start.
export XDG_CONFIG_HOME="$out/config"

# A free display number: no lock file and no socket. Xvfb itself refuses a taken one, so retry a few times.
xvfb_pid=""
cleanup() { if [[ -n "$xvfb_pid" ]]; then kill "$xvfb_pid" 2>/dev/null || true; wait "$xvfb_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
for display in $(seq $((100 + RANDOM % 400)) 600); do
  [[ -e /tmp/.X$display-lock || -e /tmp/.X11-unix/X$display ]] && continue
  Xvfb ":$display" -screen 0 ${screen}x24 -nolisten tcp >"$out/xvfb.log" 2>&1 &
  xvfb_pid=$!
  for _ in $(seq 50); do
    [[ -e /tmp/.X11-unix/X$display ]] && break
    kill -0 "$xvfb_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -e /tmp/.X11-unix/X$display ]] && kill -0 "$xvfb_pid" 2>/dev/null; then break; fi
  xvfb_pid=""
done
[[ -n "$xvfb_pid" ]] || { echo "run_gui_test: could not start Xvfb" >&2; exit 1; }

# The GPT-2 test opens a tiny checkpoint written by the tests' NumPy reference script (@CKPT@ in its script).
if [[ "$script" == gpt2* || "$script" == clipping ]]; then
  /usr/bin/python3 "$scripts/../../model/gpt2_reference.py" "$out/ckpt" --dtype F16
fi
# The model grid: GPT-2 small's 12 x 12 heads, and NumPy's maps (expected.json) of the tokens that the script's
# text "hello there cats!" becomes (gui_check asserts that the window's tokenizer agrees).
if [[ "$script" == model_grid ]]; then
  /usr/bin/python3 "$scripts/../../model/gpt2_reference.py" "$out/ckpt" --dtype F16 --layers 12 --heads 12 --embd 48 \
    --token-strings '["hello", "\u0120t", "he", "r", "e", "\u0120", "c", "a", "t", "s", "!"]'
  # NumPy's composition and direct logit attribution (at the last token and the one before, and for "hello" as
  # the target) for Find heads.
  ids=$(/usr/bin/python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["ids"]))' \
    "$out/ckpt/expected.json")
  for at in 10 9; do
    /usr/bin/python3 "$scripts/../../model/head_finding_reference.py" "$out/ckpt" --family gpt2 --ids "$ids" \
      --dla-position "$at" >"$out/ckpt/analysis_$at.json"
  done
  # The target typed as a text, "hello": its id is the text's first token's.
  /usr/bin/python3 "$scripts/../../model/head_finding_reference.py" "$out/ckpt" --family gpt2 --ids "$ids" \
    --dla-position 9 --dla-target "$(/usr/bin/python3 -c 'import json, sys; print(json.loads(sys.argv[1])[0])' "$ids")" \
    >"$out/ckpt/analysis_9_hello.json"
  # Which heads matter: NumPy's loss with each head zero-ablated (a whole forward each).
  /usr/bin/python3 "$scripts/../../model/patching_reference.py" "$out/ckpt" --ids "$ids" --metric loss \
    --out "$out/ckpt/patch_zero.json"
fi
# A Llama checkpoint with grouped-query heads (3 layers x 8 query heads, 2 per KV head) and NumPy's maps of the
# Checkpoint panel's default text, which the script runs.
if [[ -n "${kin_family:-}" ]]; then
  /usr/bin/python3 "$scripts/../../model/llama_kin_reference.py" "$out/ckpt" --family "$kin_family" --layers 3 --heads 8 \
    --kv-heads 4 --hidden 64 --text "The cat sat on the mat."
elif [[ -n "${gemma2:-}" ]]; then
  /usr/bin/python3 "$scripts/../../model/gemma_reference.py" "$out/ckpt" --family gemma2 --layers 3 --heads 4 \
    --kv-heads 2 --hidden 48 --head-dim 16 --softcap 3 --text "The cat sat on the mat."
elif [[ -n "${gemma:-}" ]]; then
  /usr/bin/python3 "$scripts/../../model/gemma_reference.py" "$out/ckpt" --family gemma --layers 3 --heads 8 \
    --kv-heads 4 --hidden 64 --head-dim 8 --text "The cat sat on the mat."
elif [[ "$script" == model_llama ]]; then
  /usr/bin/python3 "$scripts/../../model/llama_reference.py" "$out/ckpt" --family llama --layers 3 --heads 8 \
    --kv-heads 4 --hidden 64 --text "The cat sat on the mat."
fi
# A Qwen3 checkpoint whose layer 2 opens as a scene: grouped K/V, q_norm/k_norm, RoPE, a 4-key sliding window
# (max_window_layers 1: layer 2 only), and NumPy's maps of the panel's default text.
if [[ "$script" == model_llama_scene ]]; then
  /usr/bin/python3 "$scripts/../../model/llama_reference.py" "$out/ckpt" --family qwen3 --layers 2 --heads 4 \
    --kv-heads 2 --hidden 32 --window 4 --text "The cat sat on the mat."
fi
# A BERT checkpoint (an encoder: no causal mask) and NumPy's maps of the panel's default text.
if [[ "$script" == model_bert ]]; then
  /usr/bin/python3 "$scripts/../../model/bert_reference.py" "$out/ckpt" --layers 2 --heads 4 --hidden 64 \
    --text "The cat sat on the mat."
fi
# Many heads (a Qwen3 shape: 28 layers x 16 query heads in 8 KV groups), for the grid's labels.
if [[ "$script" == model_wide ]]; then
  /usr/bin/python3 "$scripts/../../model/llama_reference.py" "$out/ckpt" --family qwen3 --layers 28 --heads 16 \
    --kv-heads 8 --hidden 64 --text "The cat sat on the mat."
fi
# Paths and the file browser: a folder to browse, and a 2-layer x 3-head GPT-2 checkpoint (NumPy's maps of
# "hello there cats!" in expected.json) opened through its config.json.
if [[ "$script" == browse ]]; then
  mkdir -p "$out/pick/sub"
  /usr/bin/python3 "$scripts/../../model/gpt2_reference.py" "$out/ckpt" --dtype F16 --layers 2 --heads 3 --embd 24 \
    --token-strings '["hello", "\u0120t", "he", "r", "e", "\u0120", "c", "a", "t", "s", "!"]'
fi
# The Export tab's value-norm weighting: a scene with NumPy's weighted maps, a 2-layer x 3-head GPT-2
# checkpoint run on "hello there cats!" (NumPy's weights and value norms in expected.json), and a saved tensor.
if [[ "$script" == export_value_norms ]]; then
  /usr/bin/python3 "$scripts/../value_norms_fixture.py" "$out"
  /usr/bin/python3 "$scripts/../open_arrays_fixtures.py" "$out"  # att.npy: a saved tensor, which has no values
  /usr/bin/python3 "$scripts/../../model/gpt2_reference.py" "$out/ckpt" --dtype F16 --layers 2 --heads 3 --embd 24 \
    --token-strings '["hello", "\u0120t", "he", "r", "e", "\u0120", "c", "a", "t", "s", "!"]'
fi
# The window's command line (open_command_line) and the scripted mode's commands (script_commands): a 2-layer x
# 3-head GPT-2 checkpoint and the arrays files; a file whose name has a space, for a quoted target.
if [[ "$script" == open_command_line || "$script" == script_commands ]]; then
  /usr/bin/python3 "$scripts/../../model/gpt2_reference.py" "$out/ckpt" --dtype F16 --layers 2 --heads 3 --embd 24 \
    --token-strings '["hello", "\u0120t", "he", "r", "e", "\u0120", "c", "a", "t", "s", "!"]'
  /usr/bin/python3 "$scripts/../open_arrays_fixtures.py" "$out"
  mkdir -p "$out/pick"
  cp "$scripts/../../../assets/scenes/sentence_heads.json" "$out/pick/my scene.json"
fi
# A capture (a Mistral checkpoint's queries and keys, 4 heads in 2 KV groups, a 5-key sliding window, written by
# two tensor-parallel ranks and merged: tools/capture/attnscope_capture.py through llama_reference.py --capture,
# with v and W_O's rows for value norms), NumPy's maps and norms in ckpt/expected.json; and a copy whose
# capture.json says 3 KV heads for 4 query heads.
if [[ "$script" == capture ]]; then
  /usr/bin/python3 "$scripts/../../model/llama_reference.py" "$out/ckpt" --family mistral --layers 2 --heads 4 \
    --kv-heads 2 --hidden 32 --window 5 --text "The cat sat on the mat." --capture "$out/capture" --capture-ranks 2 \
    --capture-values
  cp -r "$out/capture" "$out/broken"
  /usr/bin/python3 -c 'import json, sys; p = sys.argv[1]; j = json.load(open(p)); j["n_kv_head"] = 3; json.dump(j, open(p, "w"))' \
    "$out/broken/capture.json"
fi
# Opening arrays files: an attention tensor as .npy and safetensors, a torch-mha layer as .npz, with NumPy's
# weights for each (expected.json).
if [[ "$script" == open_arrays ]]; then
  /usr/bin/python3 "$scripts/../open_arrays_fixtures.py" "$out"
fi
# The hardware-GPU path of a long scene on llvmpipe: the window treats the software renderer as a hardware GPU
# (a test aid), and a lowered maps limit makes a 2048-token scene long. gui_check sees the same limit.
if [[ "$script" == long_gpu ]]; then
  export ATTNSCOPE_GPU_AS_HARDWARE=1 ATTNSCOPE_MAPS_LIMIT=8M
fi
# A long scene's tiles weighted by value norms: the same lowered limit makes 2048 tokens long; on the GPU backend
# llvmpipe counts as a hardware GPU, so the tile shader writes the weighted tiles (the flash path).
if [[ "$script" == long_value_norms ]]; then
  export ATTNSCOPE_MAPS_LIMIT=8M
  if [[ "$backend" == gpu ]]; then export ATTNSCOPE_GPU_AS_HARDWARE=1; fi
fi
# The Export tab's writer held back a second (a test aid), so that the script sees it writing.
if [[ "$script" == export_background ]]; then
  export ATTNSCOPE_EXPORT_DELAY=1
fi
# The GPU's run-time check against a GPU made wrong on purpose (a test aid), on the hardware-GPU path.
if [[ "$script" == gpu_fault ]]; then
  export ATTNSCOPE_GPU_FAULT=1 ATTNSCOPE_GPU_AS_HARDWARE=1
fi
# Mesa's software renderer (llvmpipe) under Xvfb; no terminal or display needed beyond this one.
run_window() {  # SCRIPT_FILE [RUN [ARGS...]]: the window once, with @OUT@, @CKPT@ and @RUN@ filled in, ARGS first
  sed -e "s|@OUT@|$out|g" -e "s|@CKPT@|$out/ckpt|g" -e "s|@RUN@|${2:-}|g" "$1" >"$out/script${2:+_$2}.txt"
  env ${scale:+ATTNSCOPE_UI_SCALE=$scale} ${maps:+ATTNSCOPE_MODEL_MAPS=$maps} DISPLAY=":$display" LIBGL_ALWAYS_SOFTWARE=1 \
    timeout 120 "$app" "${@:3}" --backend "$backend" --script "$out/script${2:+_$2}.txt" </dev/null
}
if [[ "$script" == panes ]]; then
  # Four runs of the window: the panes moved and saved; read back; a corrupt settings file; an unwritable one.
  run_window "$scripts/panes.txt" first
  cp "$XDG_CONFIG_HOME/attnscope/panes.json" "$out/panes_saved.json"
  run_window "$scripts/panes_again.txt" again
  printf '{"left_width_em": "wide", ' >"$XDG_CONFIG_HOME/attnscope/panes.json"
  run_window "$scripts/panes_again.txt" corrupt
  printf 'a file, not a folder' >"$out/config_file"
  XDG_CONFIG_HOME="$out/config_file" run_window "$scripts/panes.txt" unwritable
  cp "$out/again.png" "$out/window.png" && cp "$out/layout_again.json" "$out/layout.json"
elif [[ "$script" == open_command_line ]]; then
  # What the window opens from its command line: a checkpoint on a text, a tensor with its tokens, an .npy file
  # through --scene (the Open form, saying the tokens it needs), a scene file; each run's layout for gui_check.
  run_window "$scripts/open_command_line.txt" checkpoint "$out/ckpt" --text "hello there cats!"
  run_window "$scripts/open_command_line.txt" tensor "$out/att.npy" --tokens "$out/tokens.json"
  run_window "$scripts/open_command_line_still.txt" form --scene "$out/att.npy"
  run_window "$scripts/open_command_line_still.txt" scene "$out/pick/my scene.json"
  cp "$out/checkpoint.png" "$out/window.png" && cp "$out/layout_checkpoint.json" "$out/layout.json"
elif [[ "$script" == teacher_figure ]]; then
  run_window "$scripts/teacher_figure.txt" "" "$(dirname "$0")/../../assets/scenes/sentence_heads.json"
else
  run_window "$scripts/$script.txt"
fi
# The CLI's value-norm maps of the same run, which the window's export must equal byte for byte.
if [[ "$script" == export_value_norms ]]; then
  "$app" model "$out/ckpt" --text "hello there cats!" --out "$out/cli_vn.npy" --weighting value-norm >/dev/null
fi
# gui_check: the window's expected size (the screen's at scale 2 on a HiDPI screen, else 1280 x 800).
GUI_WINDOW_SIZE=$screen "$check" "$check_name" "$out" "$backend"
