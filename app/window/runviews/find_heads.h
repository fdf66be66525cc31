// Find heads' state (head_scores_map.cpp, composition_map.cpp, logit_map.cpp): the map chosen and what each asks.
#pragma once

#include <memory>
#include <string>

namespace attnscope::model {
struct LayerHeadValues;  // model_export.h: a layers x heads map as drawn and as numbers
}

namespace attnscope::app {

struct FindHeadsState {
  // An index into headTypeScoreNames(), then composition through the query, key and value, then direct logit
  // attribution (head_scores_map.cpp's list).
  int score = 0;
  int comp_layer = -1, comp_head = -1;  // the head whose composition with later heads is shown (-1: the shown one)
  bool comp_baseline = true;            // composition's colours centred on the random baseline 1/sqrt(d_model)
  int dla_position = -1;                // the attributed position (from 0; -1: the last)
  int dla_target = -1;                  // the target token's id (-1: the top prediction)
  std::string dla_target_text;          // as typed: an id or a token's text
  // Which heads matter (patch_map.cpp): the intervention (0 zero ablation, 1 mean ablation, 2 patch clean into
  // corrupt, 3 corrupt into clean, 4 mean ablation over a reference text), the metric, its position (from 0; -1 the
  // last), the corrupted and the reference text as typed, and how many times Run was pressed (0: not yet; nothing is
  // computed before).
  int patch_kind = 0;
  std::string patch_metric = "loss", patch_corrupt, patch_reference;
  int patch_position = -1;
  int patch_runs = 0;
  unsigned patch_revision = 0;  // the forward's revision when Run was last pressed: a new text waits for Run again
  // The map last drawn, titled, for Export (layer_head_map.h's rememberShown), and the frame it was drawn in.
  std::shared_ptr<const model::LayerHeadValues> shown;
  int shown_frame = -1;
};

}  // namespace attnscope::app
