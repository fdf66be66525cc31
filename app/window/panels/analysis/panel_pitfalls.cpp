// Mistakes panel: the seeds' pitfalls side by side with the correct result. Pick one (each names the text it
// comes from); every head shows the mistaken weights beside their difference from the correct ones, and the
// entropy of both, so that a wrong scale's flattening or sharpening is visible at a glance.
#include <algorithm>
#include <cstdio>
#include <string>

#include "attnscope/analysis/analysis.h"
#include "attnscope/export/colormap.h"
#include "attnscope/error.h"
#include "window/lesson/lesson.h"
#include "window/panels/panels.h"
#include "window/ui_probe.h"

namespace attnscope::app {

void drawPitfallsPanel(AppState& state, ViewState& view) {
  const std::vector<PitfallInfo>& list = pitfallList();
  // Each mistake in words; its code name (the CLI's --pitfall value) after it, greyed and smaller, where it fits.
  for (std::size_t p = 0; p < list.size(); ++p) {
    ImGui::RadioButton(list[p].title, &view.pitfalls.pitfall, static_cast<int>(p));
    probeItem(std::string("pitfall.") + list[p].name);
    const float code_scale = 0.85f;
    const float code_w = ImGui::CalcTextSize(list[p].name).x * code_scale;
    if (ImGui::GetContentRegionAvail().x - (ImGui::GetItemRectMax().x - ImGui::GetCursorScreenPos().x) >
        code_w + 2 * ImGui::GetStyle().ItemSpacing.x) {
      ImGui::SameLine();
      ImGui::SetWindowFontScale(code_scale);
      ImGui::AlignTextToFramePadding();
      ImGui::TextDisabled("%s", list[p].name);
      probeItem(std::string("pitfall.") + list[p].name + ".code");
      ImGui::SetWindowFontScale(1.0f);
    }
  }
  const PitfallInfo& info =
      list[static_cast<std::size_t>(std::clamp(view.pitfalls.pitfall, 0, static_cast<int>(list.size()) - 1))];
  ImGui::TextWrapped("%s.", info.what);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("From: %s", info.source);
  ImGui::PopStyleColor();
  if (longScene(state)) {  // each pitfall recomputes and draws whole maps
    longSceneNote(state, "The mistaken maps");
    return;
  }
  const PitfallResult r = applyPitfall(state.scene(), state.result(), info.pitfall);
  if (!r.note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.95f, 0.75f, 0.35f, 1.0f));
    textWrappedAtSpaces(r.note);
    ImGui::PopStyleColor();
  }
  if (r.output) ImGui::Text("Largest change of the layer output: %.4g", r.max_abs_output_diff);

  float m = 0;
  long cells = 0;
  for (std::size_t h = 0; h < r.weights.size(); ++h) {
    m = std::max(m, static_cast<float>(r.max_abs_weight_diff[h]));
    cells += static_cast<long>(r.weights[h].size());
  }
  if (m == 0) m = 1;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float line = ImGui::GetTextLineHeight();
  const float width = ImGui::GetContentRegionAvail().x;
  drawDivergingBar(draw, ImGui::GetCursorScreenPos(), std::min(width, 12 * line), 0.6f * line, m);
  ImGui::Dummy(ImVec2(width, 1.8f * line));
  if (cells > kMaxDrawnMatrixCells) {
    ImGui::TextWrapped("%ld cells are too many to draw here; attnscope analyze --pitfall %s gives the numbers.", cells,
                       info.name);
    return;
  }
  const MaskMatrix allowed = allowedMask(state.scene());
  const MaskMatrix masked = (allowed.array() == 0).cast<std::uint8_t>();
  const Scene& scene = state.scene();
  const int n_q = scene.nQ(), n_k = scene.nK();
  const float half = (width - line) / 2;
  // The tokens beside each map, as on the heads' maps (queries left, keys below).
  const float label_w = std::min(queryLabelWidth(scene.query_tokens), 0.3f * half);
  const float cell = std::max(1.0f, std::floor(std::min((half - label_w) / n_k, 8 * line / n_q)));
  const float axes_h = mapAxesHeight(scene.keyTokens(), cell);
  for (std::size_t h = 0; h < r.weights.size(); ++h) {
    // Wrapped between words only: ImGui's own wrapping split "0.0516" after its point.
    // The entropy in the heads' and the statistics' words and rounding (lesson.h): the same head, one number.
    const std::string entropy = formatted("Head %zu: %s %s %s (correct %s)", h + 1, kEntropyName,
                                          entropyValue(r.entropy[h]).c_str(), kEntropyUnit,
                                          entropyValue(r.correct_entropy[h]).c_str());
    textWrappedAtSpaces(entropy);
    probeNote("pitfall.entropy" + std::to_string(h), entropy);
    textWrappedAtSpaces(formatted("Largest change of a weight %.3g. Left: the mistaken weights; right: mistaken - "
                                  "correct.",
                                  r.max_abs_weight_diff[h]));
    const ImVec2 c0 = ImGui::GetCursorScreenPos();
    const ImVec2 p0(std::floor(c0.x + label_w), std::floor(c0.y));
    // The mistaken weights keep the scene's mask shown as masked only where the mistake keeps it.
    const bool mask_kept = info.pitfall != Pitfall::MaskIgnored;
    drawMatrixCells(draw, r.weights[h], ImVec2(p0.x, p0.y), cell, ColorMap::Viridis, 0, 1,
                    mask_kept ? &masked : nullptr);
    probeRect("pitfall.weights" + std::to_string(h), p0, ImVec2(p0.x + n_k * cell, p0.y + n_q * cell));
    hoverMatrixCells(state.scene(), r.weights[h], ImVec2(p0.x, p0.y), cell, "mistaken weight");
    drawMapAxes(scene.query_tokens, scene.keyTokens(), p0, cell);
    const ImVec2 d0(std::floor(c0.x + half + line + label_w), p0.y);
    drawMatrixCells(draw, r.weight_diff[h], d0, cell, ColorMap::Diverging, -m, m, nullptr);
    drawMapAxes(scene.query_tokens, scene.keyTokens(), d0, cell);
    probeRect("pitfall.diff" + std::to_string(h), d0, ImVec2(d0.x + n_k * cell, d0.y + n_q * cell));
    hoverMatrixCells(state.scene(), r.weight_diff[h], d0, cell, "mistaken - correct");
    ImGui::Dummy(ImVec2(width, n_q * cell + axes_h + 0.4f * line));
  }
}

}  // namespace attnscope::app
