// gui_lesson: the worked example's lesson (scripts/lesson.txt). The entropies are worked here in double from
// seed 001's matrices (gui_check.h), never read from the engine; the layouts' notes are the texts the window drew.
#include <cmath>
#include <cstdio>
#include <string>

#include "attnscope/scene/scene_json.h"
#include "gui_check.h"

namespace gui {

namespace {

// Mean over the rows with more than one allowed key of -sum w ln w (nats): under a causal mask of 3 tokens,
// rows x2 and x3 (x1 has one key). By hand for head 1: x2 = softmax([1, 0] / sqrt 2) = [0.6698, 0.3302],
// entropy 0.6343; x3 = [0.2483, 0.2483, 0.5035], entropy 1.0373; mean 0.8358 (0.5572 if x1 counted).
double causalEntropy(int head, double scale = 1 / std::sqrt(2.0)) {
  const Grid w = expectedWeights(head, true, kX, -1, scale);
  double sum = 0;
  for (int i = 1; i < 3; ++i)
    for (int j = 0; j <= i; ++j) sum -= w[i][j] * std::log(w[i][j]);
  return sum / 2;
}

std::string fixed3(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", v);
  return text;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<float> rectOf(const nlohmann::json& layout, const std::string& id) {
  return layout.contains(id) ? layout[id].get<std::vector<float>>() : std::vector<float>{0, 0, 0, 0};
}

std::string clippedOf(const nlohmann::json& layout) {
  std::string clipped;
  for (const auto& id : layout.value("clipped", nlohmann::json::array())) clipped += " " + id.get<std::string>();
  return clipped;
}

}  // namespace

void checkLesson(Checker& c, const std::string& dir) {
  const double e1 = causalEntropy(0), e2 = causalEntropy(1);
  c.expect(std::fabs(e1 - 0.8358) < 1e-4, "head 1's causal mean row entropy is the hand value 0.8358: " + fixed3(e1));

  // The tiles: "Head N", the type chip, the entropy, the mute button, left to right with gaps, none overlapping.
  const Checker causal{loadPng(dir + "/causal.png"), loadLayout(dir + "/layout_causal.json")};
  for (int h = 0; h < 2; ++h) {
    const std::string id = "head" + std::to_string(h), want = fixed3(h == 0 ? e1 : e2);
    const std::string shown = note(causal.layout, id + ".entropy");
    c.expect(has(shown, "row entropy " + want), id + "'s title says its row entropy " + want + ": '" + shown + "'");
  }
  c.expect(has(note(causal.layout, "head0.entropy"), "mean row entropy") &&
               has(note(causal.layout, "head0.entropy"), "nats"),
           "a wide title says what the entropy averages and its unit: '" + note(causal.layout, "head0.entropy") + "'");
  const std::vector<float> title = rectOf(causal.layout, "head1.title"), type = rectOf(causal.layout, "head1.type"),
                           entropy = rectOf(causal.layout, "head1.entropy"), mute = rectOf(causal.layout, "head1.mute");
  const float line = title[3] - title[1];
  c.expect(causal.layout.contains("head1.type"), "head 2's type label drawn (previous-token, as the seed's head 2 is)");
  c.expect(type[0] - title[2] > 0.5f * line && entropy[0] - type[2] > 0.5f * line && mute[0] >= entropy[2],
           "title, type, entropy and mute apart by at least half a line (" + std::to_string(line) + " px): gaps " +
               std::to_string(type[0] - title[2]) + ", " + std::to_string(entropy[0] - type[2]) + ", " +
               std::to_string(mute[0] - entropy[2]));
  // The chip: its own fill (70, 60, 120) just left of the type's text, where the title's background is dark.
  const Rgb8 chip = causal.img.at(static_cast<int>(type[0]) - 2, static_cast<int>((type[1] + type[3]) / 2));
  c.expect(chip == Rgb8{70, 60, 120}, "the type drawn on its chip: " + Checker::str(chip));
  const std::string clipped = clippedOf(causal.layout);
  c.expect(causal.layout.contains("clipped") && clipped.empty(), "no title text overlaps another:" + clipped);

  // The statistics table: the same numbers in the same rounding.
  const nlohmann::json stats = loadLayout(dir + "/layout_stats.json");
  c.expect(note(stats, "similarity.entropy.0") == fixed3(e1) && note(stats, "similarity.entropy.1") == fixed3(e2),
           "the statistics table's entropies are " + fixed3(e1) + " and " + fixed3(e2) + ": " +
               note(stats, "similarity.entropy.0") + ", " + note(stats, "similarity.entropy.1"));

  // The Mistakes tab (scale_full_width: 1/sqrt(2 + 2) = 1/2 instead of 1/sqrt 2): mistaken and correct entropies
  // in the same words; each mistake in words, its code name after it in smaller text.
  const nlohmann::json mistakes = loadLayout(dir + "/layout_mistakes.json");
  for (int h = 0; h < 2; ++h) {
    const std::string text = note(mistakes, "pitfall.entropy" + std::to_string(h));
    const std::string want =
        "mean row entropy " + fixed3(causalEntropy(h, 0.5)) + " nats (correct " + fixed3(h == 0 ? e1 : e2) + ")";
    c.expect(has(text, want), "Mistakes tab, head " + std::to_string(h + 1) + ": '" + want + "' in '" + text + "'");
  }
  for (const char* name : {"scale_full_width", "mask_ignored", "reshape_dk_for_dv"}) {
    const std::vector<float> radio = rectOf(mistakes, std::string("pitfall.") + name);
    const std::vector<float> code = rectOf(mistakes, std::string("pitfall.") + name + ".code");
    c.expect(mistakes.contains(std::string("pitfall.") + name + ".code") && code[0] >= radio[2] &&
                 code[3] - code[1] < 0.9f * (radio[3] - radio[1]),
             std::string(name) + ": the code name after the words, smaller (" + std::to_string(code[3] - code[1]) +
                 " px high beside " + std::to_string(radio[3] - radio[1]) + ")");
  }
  c.expect(clippedOf(mistakes).empty(), "Mistakes tab: nothing clipped:" + clippedOf(mistakes));

  // Undo and redo: the unsaved mark ('*' in the window's title) goes when every edit is undone.
  const auto unsaved = [](const nlohmann::json& layout) { return has(note(layout, "window.title"), "*"); };
  const Checker undone{loadPng(dir + "/undone.png"), loadLayout(dir + "/layout_undone.json")};
  c.expect(!unsaved(undone.layout),
           "Ctrl+Z back to the opened scene: no unsaved mark ('" + note(undone.layout, "window.title") + "')");
  Checker undone_pixels = undone;
  undone_pixels.expectWorkedExample(2, false);
  c.failures += undone_pixels.failures;
  const nlohmann::json redone = loadLayout(dir + "/layout_redone.json"),
                       redone_y = loadLayout(dir + "/layout_redone_y.json");
  const nlohmann::json undone_button = loadLayout(dir + "/layout_undone_button.json");
  c.expect(unsaved(redone) && unsaved(redone_y) && !unsaved(undone_button) && unsaved(c.layout),
           "unsaved after Ctrl+Shift+Z, Ctrl+Y and the Redo button; not after the Undo button");
  c.expect(c.layout.contains("file.redo") && c.layout.contains("file.undo"), "Redo beside Undo in the file bar");
  c.expectWorkedExample(2, true);  // the Redo button brought the causal mask back

  // 64 keys: positions every k-th (k in 1, 2, 5, 10, 20), from key 0 on, each under its key's bar (the last may
  // be left out where the clamp at the plot's end would bring it too close), none overlapping (clipped).
  const nlohmann::json profile = loadLayout(dir + "/layout_profile.json");
  const std::vector<float> plot = rectOf(profile, "profile.plot");
  std::vector<int> labelled;
  for (int j = 0; j < 64; ++j)
    if (profile.contains("profile.key." + std::to_string(j))) labelled.push_back(j);
  const int stride = labelled.size() > 1 ? labelled[1] - labelled[0] : 0;
  bool regular = !labelled.empty() && labelled[0] == 0 &&
                 (stride == 1 || stride == 2 || stride == 5 || stride == 10 || stride == 20);
  const float key_w = (plot[2] - plot[0] - 2) / 64;
  for (std::size_t k = 0; k < labelled.size(); ++k) {
    regular = regular && labelled[k] == static_cast<int>(k) * stride;
    const std::vector<float> r = rectOf(profile, "profile.key." + std::to_string(labelled[k]));
    const float bar = plot[0] + 1 + (labelled[k] + 0.5f) * key_w, middle = (r[0] + r[2]) / 2;
    regular = regular && (std::fabs(middle - bar) <= key_w || k == 0);  // key 0's label starts at the plot's edge
  }
  c.expect(regular && labelled.size() >= 5 && 64 - labelled.back() <= 2 * stride,
           "64 keys labelled every " + std::to_string(stride) +
               " from 0, under their bars: " + std::to_string(labelled.size()) + " labels, the last at " +
               std::to_string(labelled.empty() ? -1 : labelled.back()));
  c.expect(clippedOf(profile).empty(), "the profile's labels never overlap:" + clippedOf(profile));
}

// gui_lesson_walk (scripts/lesson_walk.txt): the walkthrough's tables named and masked as the maps; an edit's
// changed cells marked, their weight before it on hover; the banner's sentence.
void checkLessonWalk(Checker& c, const std::string& dir) {
  // Head 1's weights step under the causal mask: rows and columns by token, masked cells "masked".
  const Checker weights{loadPng(dir + "/weights.png"), loadLayout(dir + "/layout_weights.json")};
  const char* tokens[] = {"x1", "x2", "x3"};
  for (int k = 0; k < 3; ++k) {
    const std::string k_s = std::to_string(k);
    c.expect(note(weights.layout, "walk.weights.row." + k_s) == tokens[k] &&
                 note(weights.layout, "walk.weights.col." + k_s) == tokens[k],
             std::string("weights' row and column ") + k_s + " named " + tokens[k]);
  }
  for (const auto& [i, j] : {std::pair{0, 1}, std::pair{0, 2}, std::pair{1, 2}}) {
    const std::string at = std::to_string(i) + "." + std::to_string(j);
    c.expect(note(weights.layout, "walk.weights." + at) == "masked", "weights table cell " + at + " says masked");
  }
  // The step's thumbnail: masked cells in the maps' grey, the others in their weight's colour.
  const Grid w = expectedWeights(0, true);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      const Rgb8 got = weights.cell("walk.heatmap", i, j, 3, 3);
      const bool ok = j > i ? got == attnscope::kMaskedColor : isWeightColor(got, w[i][j]);
      c.expect(ok, "thumbnail cell (" + std::to_string(i) + "," + std::to_string(j) + ") " +
                       (j > i ? "masked grey" : "weight " + fixed3(w[i][j])) + ": drawn " + Checker::str(got));
    }
  // The errata where they apply (issue 43). Under the causal mask the one number the text misprints is head 2's
  // V = X W2_V, row x3, column v2 (the text prints [0, 0] for that row, seed 001): the weights step has no red
  // paragraph, only the line that names V's step.
  c.expect(note(weights.layout, "walk.disagreements").empty() &&
               has(note(weights.layout, "walk.errata"), "(Head 2's V)") &&
               !has(note(weights.layout, "walk.errata"), "scaled scores"),
           "the weights step lists the misprinted step, head 2's V, without the red paragraph: '" +
               note(weights.layout, "walk.errata") + "'");
  // Unmasked, step 1: the start cue and both misprinted steps listed (step 6, head 1's scaled scores, and V's).
  const nlohmann::json start = loadLayout(dir + "/layout_start.json");
  c.expect(start.contains("walk.start") && note(start, "walk.disagreements").empty() &&
               has(note(start, "walk.errata"), "step 6 (Head 1's scaled scores)") &&
               has(note(start, "walk.errata"), "(Head 2's V)"),
           "step 1: start here, and the misprinted steps: '" + note(start, "walk.errata") + "'");
  // Its first button went to step 6, which says its misprints in red: head 1's Q K^T scaled by 1/sqrt(2) at
  // x1 -> x1 is q1 . k1 / sqrt(2) = ([1, 0] . [0, 1]) / sqrt(2) = 0 (X row x1 = [1, 0, 1, 0], W1_Q and W1_K as
  // printed), where the text prints 0.71.
  const nlohmann::json errata = loadLayout(dir + "/layout_errata.json");
  const std::string red = note(errata, "walk.disagreements");
  c.expect(note(errata, "walk.step") == "6" && !errata.contains("walk.start") &&
               red.rfind("Head 1's scaled score for x1 -> x1 does not match the text: 0.71 printed, 0 computed.", 0) == 0,
           "step 6 says its misprints in red: '" + red + "'");
  // One precision: the text's numbers as it printed them (two decimals here), the computed ones to 4 decimals
  // without trailing zeros (q1 . k2 / sqrt(2) = 1 / sqrt(2) = 0.70711 -> "0.7071"), the tolerance in the text's
  // own terms (half its last digit).
  c.expect(note(errata, "walk.scaled scores.printed.0.0") == "0.71" && note(errata, "walk.scaled scores.0.0") == "0" &&
               note(errata, "walk.scaled scores.0.1") == "0.7071" &&
               has(note(errata, "walk.scaled scores.precision"), "beyond the printed precision (+-0.005)"),
           "step 6's numbers: printed '" + note(errata, "walk.scaled scores.printed.0.0") + "', computed '" +
               note(errata, "walk.scaled scores.0.0") + "', '" + note(errata, "walk.scaled scores.0.1") + "'; '" +
               note(errata, "walk.scaled scores.precision") + "'");
  // And V's step (under the mask, after the weights step): the sentence with the number worked out here. X's row
  // x3 = [1, 1, 0, 0] times the scene's W2_V (the seed's input).
  // The text prints V2 in whole numbers: so are its printed table, the sentence and the tolerance.
  const attnscope::Scene worked = attnscope::workedExampleScene();
  double v = 0;
  for (int d = 0; d < 4; ++d) v += kX[2][static_cast<std::size_t>(d)] * worked.heads[1].w_v(d, 1);
  c.expect(v == 2, "by hand, V2's row x3, column v2 is 2: " + fixed3(v));
  const nlohmann::json v2 = loadLayout(dir + "/layout_v2.json");
  const std::string banner = note(v2, "walk.disagreements");
  const std::string want = "Head 2's V at row x3, column v2 does not match the text: 0 printed, 2 computed.";
  c.expect(banner == want, "V's step says which number disagrees: '" + banner + "', expected '" + want + "'");
  c.expect(note(v2, "walk.V.printed.2.1") == "0" && note(v2, "walk.V.2.1") == "2" &&
               note(v2, "walk.V.precision") == "1 value differs beyond the printed precision (+-0.5)",
           "whole numbers printed whole ('" + note(v2, "walk.V.printed.2.1") + "'), computed '" +
               note(v2, "walk.V.2.1") + "'; '" + note(v2, "walk.V.precision") + "'");
  // The Projections tab names W_Q's rows and columns as the Steps tab does (dim 1.., q1..; W_V's v1..).
  const nlohmann::json proj = loadLayout(dir + "/layout_proj.json");
  c.expect(note(proj, "proj.w_q.row.0") == "dim 1" && note(proj, "proj.w_q.row.3") == "dim 4" &&
               note(proj, "proj.w_q.col.1") == "q2" && note(proj, "proj.w_v.col.0") == "v1",
           "Projections: W_Q's rows '" + note(proj, "proj.w_q.row.0") + "', columns '" + note(proj, "proj.w_q.col.1") +
               "', W_V's '" + note(proj, "proj.w_v.col.0") + "'");
  c.expect(has(note(weights.layout, "walk.dropped.weights"), "no longer apply"),
           "the dropped comparison in plain English");
  c.expect(clippedOf(weights.layout).empty(),
           "weights step: nothing clipped or overlapping:" + clippedOf(weights.layout));
  // W_Q's step: rows by X's dimensions, columns by the head's query dimensions.
  const nlohmann::json wq = loadLayout(dir + "/layout_wq.json");
  c.expect(note(wq, "walk.W_Q.row.0") == "dim 1" && note(wq, "walk.W_Q.row.3") == "dim 4" &&
               note(wq, "walk.W_Q.col.0") == "q1" && note(wq, "walk.W_Q.col.1") == "q2",
           "W_Q's rows named dim 1..4 and columns q1, q2: " + note(wq, "walk.W_Q.row.0") + ", " +
               note(wq, "walk.W_Q.col.1"));

  // X[3][3] 0 -> 1 (mask undone first): head 2's rows x2 and x3 change (by hand: K2's row x3 becomes [0, 1], so
  // q2 = [0, 1] now scores 1 against it and x3's query [1, 0] scores 1 against x2), row x1 and head 1 do not.
  Grid x = kX;
  x[2][2] = 1;
  const Checker edited{loadPng(dir + "/edited.png"), loadLayout(dir + "/layout_edited.json")};
  for (int h = 0; h < 2; ++h) {
    const Grid a = expectedWeights(h, false), b = expectedWeights(h, false, x);
    const std::vector<float> r = edited.rect("head" + std::to_string(h) + ".map");
    const float cell = (r[2] - r[0]) / 3;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        const bool changed = std::fabs(b[i][j] - a[i][j]) >= 5e-4;
        // The outline's left side, 3 px in from the cell's edge, a fifth of the way down (above the cell's text).
        const Rgb8 got =
            edited.img.at(static_cast<int>(r[0] + j * cell + 3), static_cast<int>(r[1] + (i + 0.2f) * cell));
        const bool amber = got.r > 200 && got.g > 150 && got.b < 110;
        c.expect(changed ? amber : isWeightColor(got, b[i][j]),
                 "head " + std::to_string(h + 1) + " cell (" + std::to_string(i) + "," + std::to_string(j) + ") " +
                     (changed ? "changed, outlined amber" : "unchanged, not outlined") + ": " + Checker::str(got));
      }
  }
  const nlohmann::json hover = loadLayout(dir + "/layout_hover.json");
  c.expect(note(hover, "hover.before") == "before the last edit: 0.3333",
           "hover on head 2's (x3, x2) says its weight before the edit, 1/3: '" + note(hover, "hover.before") + "'");
  c.expect(has(note(c.layout, "walk.dropped.Q"), "no longer apply"),
           "head 2's Q step: the printed Q2 said to no longer apply");
}

void checkTeacherFigure(Checker& c, const std::string& /*dir: the layout and screenshot are in c*/) {
  // sentence_heads.json's tokens and the head types its four heads were built to show (its description):
  // previous-token, first-token, induction, duplicate-token.
  const char* types[] = {"previous-token", "first-token", "induction", "duplicate-token"};
  int queries = 0, keys = 0;
  for (int i = 0; i < 10; ++i) {
    queries += c.layout.contains("axis.query." + std::to_string(i));
    keys += c.layout.contains("axis.key." + std::to_string(i));
  }
  c.expect(queries == 10 && keys == 10, "every token labels the tiles' axes: " + std::to_string(queries) +
                                            " of 10 queries, " + std::to_string(keys) + " of 10 keys");
  for (int h = 0; h < 4; ++h) {
    const std::string id = "head" + std::to_string(h);
    const std::vector<float> title = rectOf(c.layout, id + ".title"), type = rectOf(c.layout, id + ".type"),
                             map = rectOf(c.layout, id + ".map");
    c.expect(c.layout.contains(id + ".type") && note(c.layout, id + ".type") == types[h],
             id + "'s type chip drawn: '" + note(c.layout, id + ".type") + "', want '" + types[h] + "'");
    c.expect(type[1] >= title[1] && type[3] <= map[1] + 1, id + "'s chip lies between its title's top and its map");
    // Its mean row entropy beside the chip, shortened to the room ("H 0.634" at the shortest; the hover says it).
    const std::string entropy = note(c.layout, id + ".entropy");
    const std::vector<float> e = rectOf(c.layout, id + ".entropy");
    c.expect(!entropy.empty() && e[0] >= type[2] && e[3] <= map[1] + 1,
             id + "'s entropy beside its chip: '" + entropy + "'");
  }
  c.expect(clippedOf(c.layout).empty(), "nothing clipped:" + clippedOf(c.layout));
}

}  // namespace gui
