// Widgets the panels share: editable matrix tables, integer steppers, typed number fields, inline errors.
#include <imgui_internal.h>  // ImGui::GetActiveID: a number field keeps its own text while it is being typed in
#include <imgui_stdlib.h>

#include <cerrno>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "window/widgets/widgets.h"
#include "window/ui_probe.h"

namespace attnscope::app {

namespace {
bool g_fresh_gesture = false;    // an item became active and has not changed anything yet
constexpr int kProbedCells = 8;  // matrixTable names cells (i, j) with i, j < 8 for the scripted mode
constexpr int kShownRows = 12;   // matrixTable's height in rows; more rows scroll inside it
constexpr float kMaxCellValue = 1e6f;
}  // namespace

bool continuesGesture(bool changed) {
  if (ImGui::IsItemActivated()) g_fresh_gesture = true;
  if (!changed) return false;
  const bool continuing = !g_fresh_gesture;
  g_fresh_gesture = false;
  return continuing;
}

bool matrixTable(const char* id, const Matrix& m, Matrix& out, bool& continuing, const char* probe,
                 const std::vector<std::string>* row_names, const std::vector<std::string>* col_names) {
  if (m.size() == 0) return false;
  if (row_names && row_names->size() != static_cast<std::size_t>(m.rows())) row_names = nullptr;
  if (col_names && col_names->size() < static_cast<std::size_t>(std::min<Eigen::Index>(m.cols(), 63)))
    col_names = nullptr;
  const float width = ImGui::GetFontSize() * 3.6f;
  bool changed = false;
  const int cols = static_cast<int>(std::min<Eigen::Index>(m.cols(), 63));
  // A scrolling table left to size itself takes all the height that remains: size it to its rows (at most
  // kShownRows, scrolling beyond), plus the horizontal scrollbar when the columns do not fit.
  const ImGuiStyle& style = ImGui::GetStyle();
  const int shown_rows = static_cast<int>(std::min<Eigen::Index>(m.rows(), kShownRows));
  float height = static_cast<float>(shown_rows) * (ImGui::GetFrameHeight() + 2 * style.CellPadding.y) + 2;
  if (col_names) height += ImGui::GetTextLineHeight() + 2 * style.CellPadding.y;
  float row_label_w = ImGui::CalcTextSize("0000").x;
  if (row_names)
    for (const std::string& name : *row_names) row_label_w = std::max(row_label_w, ImGui::CalcTextSize(name.c_str()).x);
  const float content_w = row_label_w + static_cast<float>(cols + 1) * 2 * style.CellPadding.x +
                          static_cast<float>(cols) * width;
  if (content_w > ImGui::GetContentRegionAvail().x) height += style.ScrollbarSize;
  ImGuiTableFlags flags =
      ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
  if (m.rows() > kShownRows) flags |= ImGuiTableFlags_ScrollY;
  if (!ImGui::BeginTable(id, cols + 1, flags, ImVec2(0, height))) return false;
  if (col_names) {  // what each column is (a dimension), above it
    ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
    for (int j = 0; j < cols; ++j) {
      ImGui::TableSetColumnIndex(j + 1);
      ImGui::TextDisabled("%s", (*col_names)[static_cast<std::size_t>(j)].c_str());
      if (probe && j < kProbedCells) {
        probeItem(std::string(probe) + ".col." + std::to_string(j));
        probeNote(std::string(probe) + ".col." + std::to_string(j), (*col_names)[static_cast<std::size_t>(j)]);
      }
    }
  }
  // Only the rows on screen are submitted: a few thousand drag widgets a frame would stall a big scene.
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(m.rows()));
  while (clipper.Step())
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (row_names) {  // what each row is (a token, a dimension)
        ImGui::TextDisabled("%s", (*row_names)[static_cast<std::size_t>(i)].c_str());
        if (probe && i < kProbedCells) {
          probeItem(std::string(probe) + ".row." + std::to_string(i));
          probeNote(std::string(probe) + ".row." + std::to_string(i), (*row_names)[static_cast<std::size_t>(i)]);
        }
      } else {
        ImGui::TextDisabled("%d", i);
      }
      for (int j = 0; j < cols; ++j) {
        ImGui::TableNextColumn();
        float value = m(i, j);
        ImGui::PushID(i * 64 + j);
        ImGui::SetNextItemWidth(width);
        // Typed or dragged, a value stays within +-kMaxCellValue (clamped where the user sees it): products of
        // two such values over d_model terms stay far inside float32, so scores never overflow to inf.
        const bool edited =
            ImGui::DragFloat("##v", &value, 0.01f, -kMaxCellValue, kMaxCellValue, "%.3f", ImGuiSliderFlags_AlwaysClamp);
        const bool continues = continuesGesture(edited);
        if (probe && i < kProbedCells && j < kProbedCells)
          probeItem(std::string(probe) + "." + std::to_string(i) + "." + std::to_string(j));
        if (edited) {
          continuing = continues;
          if (!changed) out = m;
          out(i, j) = value;
          changed = true;
        }
        ImGui::PopID();
      }
    }
  ImGui::EndTable();
  return changed;
}

bool stepperInt(const char* label, const std::string& probe, int& value, int min, int max) {
  ImGui::PushID(label);
  const int before = value;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label);
  ImGui::SameLine(ImGui::GetFontSize() * 6.5f);
  ImGui::BeginDisabled(value <= min);
  if (ImGui::Button("-", ImVec2(ImGui::GetFrameHeight(), 0)) && value > min) --value;
  ImGui::EndDisabled();
  probeItem(probe + ".minus");
  ImGui::SameLine();
  // The error line of the typed value goes under the whole row: drawn after the + button.
  intField(label, probe, value, min, max, ImGui::GetFontSize() * 4.0f);
  ImGui::SameLine();
  ImGui::BeginDisabled(value >= max);
  if (ImGui::Button("+", ImVec2(ImGui::GetFrameHeight(), 0)) && value < max) ++value;
  ImGui::EndDisabled();
  probeItem(probe + ".plus");
  showFieldError(probe);
  probeNote(probe, std::to_string(value));  // the value shown, for the layout's notes
  ImGui::PopID();
  return value != before;
}

// [SECTION] typed number fields

namespace {
std::map<ImGuiID, std::string> g_typing;            // the text of the field being typed in
std::map<std::string, std::string> g_field_errors;  // by probe name: why the last typed value was refused

std::string shortNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

// Parses the whole of `text` as a number; false when it is not one (trailing characters, empty, out of double).
bool parseNumber(const std::string& text, double& out) {
  const char* begin = text.c_str();
  while (*begin == ' ') ++begin;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE) return false;
  while (*end == ' ') ++end;
  return *end == '\0';
}

}  // namespace

bool committedText(const std::string& probe, const std::string& shown, float width, std::string& typed) {
  ImGui::PushID(probe.c_str());
  const ImGuiID id = ImGui::GetID("##text");
  std::string& text = g_typing[id];
  if (ImGui::GetActiveID() != id) text = shown;
  ImGui::SetNextItemWidth(width);
  ImGui::InputText("##text", &text, ImGuiInputTextFlags_AutoSelectAll);
  probeItem(probe);
  const bool left = ImGui::IsItemDeactivatedAfterEdit();
  if (left) typed = text;
  ImGui::PopID();
  return left;
}

namespace {

bool acceptNumber(const char* name, const std::string& probe, const std::string& typed, double min, double max,
                  bool integer, double& out) {
  const std::string range =
      (integer ? "a whole number from " : "a number from ") + shortNumber(min) + " to " + shortNumber(max);
  if (!parseNumber(typed, out) || !std::isfinite(out) || out < min || out > max ||
      (integer && out != std::floor(out))) {
    setFieldError(probe, std::string(name) + ": expected " + range + ", got '" + typed + "'");
    return false;
  }
  setFieldError(probe, "");
  return true;
}
}  // namespace

void showFieldError(const std::string& probe) {
  const auto it = g_field_errors.find(probe);
  if (it != g_field_errors.end() && !it->second.empty()) {
    errorText(it->second);
    probeItem(probe + ".error");
  }
}

void setFieldError(const std::string& probe, const std::string& message) { g_field_errors[probe] = message; }

bool intField(const char* name, const std::string& probe, int& value, long min, long max, float width) {
  std::string typed;
  double parsed = 0;
  if (!committedText(probe, shortNumber(value), width, typed) ||
      !acceptNumber(name, probe, typed, static_cast<double>(min), static_cast<double>(max), true, parsed))
    return false;
  const int before = value;
  value = static_cast<int>(parsed);
  return value != before;
}

bool numberField(const char* name, const std::string& probe, double& value, double min, double max, float width) {
  std::string typed;
  double parsed = 0;
  if (!committedText(probe, shortNumber(value), width, typed) ||
      !acceptNumber(name, probe, typed, min, max, false, parsed))
    return false;
  const double before = value;
  value = parsed;
  return value != before;
}

void errorText(const std::string& message) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
  textWrappedAtSpaces(message);
  ImGui::PopStyleColor();
}

void textWrappedAtSpaces(const std::string& text) {
  const float width = ImGui::GetContentRegionAvail().x;
  std::size_t start = 0;
  while (start <= text.size()) {  // each paragraph ('\n'), then its words
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line;
    std::size_t pos = start;
    while (pos < end) {
      std::size_t next = text.find(' ', pos);
      if (next == std::string::npos || next > end) next = end;
      const std::string word = text.substr(pos, next - pos);
      pos = next + 1;
      if (word.empty()) continue;
      const std::string longer = line.empty() ? word : line + " " + word;
      if (!line.empty() && ImGui::CalcTextSize(longer.c_str()).x > width) {
        ImGui::TextUnformatted(line.c_str());
        line = word;
      } else {
        line = longer;
      }
    }
    ImGui::TextUnformatted(line.c_str());
    start = end + 1;
  }
}

std::string formatted(const char* format, ...) {
  char text[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  return text;
}

void sectionHeader(const char* title) {
  ImGui::Spacing();
  ImGui::TextColored(ImVec4(0.55f, 0.75f, 1.0f, 1.0f), "%s", title);
  ImGui::Separator();
}

void showEditError(const AppState& state, const char* source) {
  if (state.editError().empty() || state.editSource() != source) return;
  errorText("Not applied: " + state.editError());
  probeItem(std::string("edit_error.") + source);
}

void drawMatrixCells(ImDrawList* list, const Matrix& values, ImVec2 p0, float cell, ColorMap map, float vmin,
                     float vmax, const MaskMatrix* masked) {
  for (Eigen::Index i = 0; i < values.rows(); ++i)
    for (Eigen::Index j = 0; j < values.cols(); ++j) {
      const Rgb8 c =
          masked && (*masked)(i, j) ? kMaskedColor : colorAt(map, colorMapParameter(values(i, j), vmin, vmax));
      const float x = p0.x + static_cast<float>(j) * cell, y = p0.y + static_cast<float>(i) * cell;
      list->AddRectFilled(ImVec2(x, y), ImVec2(x + cell, y + cell), IM_COL32(c.r, c.g, c.b, 255));
    }
  const ImVec2 p1(p0.x + static_cast<float>(values.cols()) * cell, p0.y + static_cast<float>(values.rows()) * cell);
  list->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), IM_COL32(120, 120, 120, 255));
}

void hoverMatrixCells(const Scene& scene, const Matrix& values, ImVec2 p0, float cell, const char* what) {
  if (!ImGui::IsWindowHovered() || cell <= 0) return;
  const ImVec2 m = ImGui::GetIO().MousePos;
  const int i = static_cast<int>(std::floor((m.y - p0.y) / cell)),
            j = static_cast<int>(std::floor((m.x - p0.x) / cell));
  if (i < 0 || j < 0 || i >= values.rows() || j >= values.cols()) return;
  const ImVec2 c0(p0.x + static_cast<float>(j) * cell, p0.y + static_cast<float>(i) * cell);
  ImGui::GetWindowDrawList()->AddRect(c0, ImVec2(c0.x + cell, c0.y + cell), IM_COL32(255, 255, 255, 255), 0, 0, 2.0f);
  ImGui::BeginTooltip();
  ImGui::Text("%s %.4f", what, values(i, j));
  // Positions from 0 with their tokens, as on the heads' tooltips.
  if (i < scene.nQ())
    ImGui::Text("query  %s  (position %d)", scene.query_tokens[static_cast<std::size_t>(i)].c_str(), i);
  if (j < scene.nK())
    ImGui::Text("key    %s  (position %d)", scene.keyTokens()[static_cast<std::size_t>(j)].c_str(), j);
  ImGui::EndTooltip();
}

void drawScaleBar(ImDrawList* list, ImVec2 p0, float width, float height, ColorMap map,
                  const std::array<std::string, 3>& labels) {
  const auto& table = colorMapTable(map);
  for (int i = 0; i < kColorMapSize; ++i) {
    const float x0 = p0.x + width * static_cast<float>(i) / kColorMapSize;
    const float x1 = p0.x + width * static_cast<float>(i + 1) / kColorMapSize;
    const Rgb8 c = table[static_cast<std::size_t>(i)];
    list->AddRectFilled(ImVec2(x0, p0.y), ImVec2(x1 + 0.5f, p0.y + height), IM_COL32(c.r, c.g, c.b, 255));
  }
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const float below = p0.y + height + 2;
  const char* lo = labels[0].c_str();
  const char* mid = labels[1].c_str();
  const char* hi = labels[2].c_str();
  list->AddText(ImVec2(p0.x, below), text, lo);
  list->AddText(ImVec2(p0.x + width * 0.5f - ImGui::CalcTextSize(mid).x * 0.5f, below), text, mid);
  list->AddText(ImVec2(p0.x + width - ImGui::CalcTextSize(hi).x, below), text, hi);
}

void drawScaleBar(ImDrawList* list, ImVec2 p0, float width, float height, ColorMap map, float vmin, float vmax) {
  drawScaleBar(list, p0, width, height, map,
               {formatted("%.3g", vmin), formatted("%.3g", 0.5f * (vmin + vmax)),
                formatted(vmin < 0 ? "+%.3g" : "%.3g", vmax)});
}

void drawDivergingBar(ImDrawList* list, ImVec2 p0, float width, float height, float m) {
  drawScaleBar(list, p0, width, height, ColorMap::Diverging, -m, m);
}

bool longScene(const AppState& state) {
  const Result& r = state.result();
  return !r.heads.empty() && !r.heads[0].hasMap();
}

void longSceneNote(const AppState& state, const char* what) {
  textWrappedAtSpaces(formatted(
      "%s: not computed in the window for a long scene (its %d x %d maps are past the maps limit, "
      "ATTNSCOPE_MAPS_LIMIT, and are computed on demand as tiles). Use `attnscope analyze` for the streamed "
      "statistics and scores, `attnscope export --rows A:B --cols C:D` for any block of weights.",
      what, state.scene().nQ(), state.scene().nK()));
}

void valueNormSwitch(ViewState& view, const std::string& probe, const std::string& note_probe, const char* over,
                     bool disabled) {
  const char* label = "value norms";
  const float w = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + w <= right) ImGui::SameLine();
  bool weighted = view.run.value_norm == 1;
  ImGui::BeginDisabled(disabled);
  if (ImGui::Checkbox(label, &weighted)) view.run.value_norm = weighted ? 1 : 0;
  ImGui::EndDisabled();
  probeItem(probe);
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("each weight times the size of what its key's value adds through the head,\n"
                      "||(x_j W_V + b_V) W_O^h|| (Kobayashi et al. 2020), over %s:\n"
                      "a weight on a key whose value the head barely writes fades",
                      over);
  if (view.run.value_norm == 1 && !disabled) {
    ImGui::TextDisabled("weights x value norms / %s norm", over);
    probeItem(note_probe);
  }
}

}  // namespace attnscope::app
