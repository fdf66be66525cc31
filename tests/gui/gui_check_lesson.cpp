// gui_lesson: the worked example's lesson (scripts/lesson.txt). The entropies are worked here in double from
// seed 001's matrices (gui_check.h), never read from the engine; the layouts' notes are the texts the window drew.
#include <cmath>
#include <cstdio>
#include <string>

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
    const std::string want = "mean row entropy " + fixed3(causalEntropy(h, 0.5)) + " nats (correct " +
                             fixed3(h == 0 ? e1 : e2) + ")";
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
  c.expect(!unsaved(undone.layout), "Ctrl+Z back to the opened scene: no unsaved mark ('" +
                                        note(undone.layout, "window.title") + "')");
  Checker undone_pixels = undone;
  undone_pixels.expectWorkedExample(2, false);
  c.failures += undone_pixels.failures;
  const nlohmann::json redone = loadLayout(dir + "/layout_redone.json"), redone_y = loadLayout(dir + "/layout_redone_y.json");
  const nlohmann::json undone_button = loadLayout(dir + "/layout_undone_button.json");
  c.expect(unsaved(redone) && unsaved(redone_y) && !unsaved(undone_button) && unsaved(c.layout),
           "unsaved after Ctrl+Shift+Z, Ctrl+Y and the Redo button; not after the Undo button");
  c.expect(c.layout.contains("file.redo") && c.layout.contains("file.undo"), "Redo beside Undo in the file bar");
  c.expectWorkedExample(2, true);  // the Redo button brought the causal mask back
}

}  // namespace gui
