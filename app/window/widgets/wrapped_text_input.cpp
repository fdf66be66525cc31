// A multi-line text box that wraps at word boundaries. ImGui 1.86's InputTextMultiline cannot wrap, so the box
// edits a display copy of the text in which some spaces are shown as line breaks ("soft" breaks). A soft break
// takes the place of a space, one byte for one, so lengths and the cursor never move when the text reflows;
// the caller's text keeps its spaces and its own line breaks ("hard" breaks).
#include <imgui.h>
#include <imgui_internal.h>  // ImTextCharFromUtf8, GetActiveID
#include <imgui_stdlib.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "window/widgets/widgets.h"

namespace attnscope::app {

namespace {

// Texts longer than this are shown unwrapped (reflowing them each frame would cost more than it helps).
constexpr std::size_t kMaxWrapped = 256 * 1024;

struct WrapState {
  std::string buffer;      // the box's own string (ImGui writes its edits here, after the callback)
  std::string display;     // what the box showed last: the text with soft breaks in place of their spaces
  std::vector<char> soft;  // (display.size()): 1 where display holds a soft break
  float width = 0;         // the width wrapped at
};

// The text behind a display: soft breaks back to spaces.
std::string trueText(const std::string& display, const std::vector<char>& soft) {
  std::string text = display;
  for (std::size_t i = 0; i < text.size(); ++i)
    if (soft[i]) text[i] = ' ';
  return text;
}

// Greedy word wrap of `text` at `width` pixels: a 1 at each space that ends a line. A word wider than the line
// is not broken (there is no space to turn into a break); the box scrolls sideways there.
std::vector<char> wrapPoints(const std::string& text, float width) {
  std::vector<char> soft(text.size(), 0);
  if (text.size() > kMaxWrapped || width <= 0) return soft;
  const ImFont* font = ImGui::GetFont();
  const float scale = ImGui::GetFontSize() / font->FontSize;
  float x = 0;            // the line's width so far
  std::size_t space = 0;  // the last space of the line, + 1 (0: none yet)
  float after_space = 0;  // the line's width after that space
  for (std::size_t i = 0; i < text.size();) {
    unsigned int c = 0;
    const int bytes = ImTextCharFromUtf8(&c, text.c_str() + i, text.c_str() + text.size());
    const std::size_t next = i + static_cast<std::size_t>(std::max(bytes, 1));
    if (c == '\n') {
      x = 0;
      space = 0;
    } else {
      x += font->GetCharAdvance(static_cast<ImWchar>(c)) * scale;
      if (c == ' ') {
        space = i + 1;
        after_space = x;
      } else if (x > width && space > 0) {
        soft[space - 1] = 1;  // the line ends at its last space; the rest moves to the next line
        x -= after_space;
        space = 0;
      }
    }
    i = next;
  }
  return soft;
}

// Writes `soft`'s breaks (and spaces where breaks were) into `display`; true when a byte changed.
bool applyBreaks(char* display, std::size_t size, std::vector<char>& old_soft, const std::vector<char>& soft) {
  bool changed = false;
  for (std::size_t i = 0; i < size; ++i)
    if (old_soft[i] != soft[i]) {
      display[i] = soft[i] ? '\n' : ' ';
      changed = true;
    }
  old_soft = soft;
  return changed;
}

// While the box is active ImGui keeps its own copy of the buffer; an edit of it is read here, every frame:
// bytes before and after the edited run keep their soft breaks, what was typed is the user's own (a typed
// line break is hard). Then the text is wrapped again and the breaks written into ImGui's buffer.
struct CallbackData {
  WrapState* state;
  std::string* text;
};
int onEdit(ImGuiInputTextCallbackData* data) {
  CallbackData& cb = *static_cast<CallbackData*>(data->UserData);
  WrapState& st = *cb.state;
  const std::string now(data->Buf, static_cast<std::size_t>(data->BufTextLen));
  if (now != st.display) {
    const std::size_t old_n = st.display.size(), new_n = now.size();
    std::size_t prefix = 0;
    while (prefix < old_n && prefix < new_n && st.display[prefix] == now[prefix]) ++prefix;
    std::size_t suffix = 0;
    while (suffix < old_n - prefix && suffix < new_n - prefix &&
           st.display[old_n - 1 - suffix] == now[new_n - 1 - suffix])
      ++suffix;
    std::vector<char> soft(new_n, 0);
    std::copy(st.soft.begin(), st.soft.begin() + static_cast<long>(prefix), soft.begin());
    std::copy(st.soft.end() - static_cast<long>(suffix), st.soft.end(), soft.end() - static_cast<long>(suffix));
    st.display = now;
    st.soft = soft;
    *cb.text = trueText(st.display, st.soft);
  }
  if (applyBreaks(data->Buf, st.display.size(), st.soft, wrapPoints(*cb.text, st.width))) {
    st.display.assign(data->Buf, static_cast<std::size_t>(data->BufTextLen));
    data->BufDirty = true;
  }
  return 0;
}

}  // namespace

bool wrappedTextInput(const char* id, std::string& text, ImVec2 size) {
  static std::map<ImGuiID, WrapState> states;
  WrapState& st = states[ImGui::GetID(id)];
  const ImGuiStyle& style = ImGui::GetStyle();
  const float box_w = size.x > 0 ? size.x : ImGui::GetContentRegionAvail().x + size.x;
  // The room for text: the frame's padding both sides, and a vertical scrollbar when the text outgrows the box.
  st.width = box_w - 2 * style.FramePadding.x - style.ScrollbarSize - 1;
  // Not being typed in: the display follows the caller's text (changed by a preset, say) and the width.
  if (ImGui::GetActiveID() != ImGui::GetID(id) || st.display.size() != text.size() ||
      trueText(st.display, st.soft) != text) {
    st.display = text;
    st.soft.assign(text.size(), 0);
    applyBreaks(st.display.data(), st.display.size(), st.soft, wrapPoints(text, st.width));
    st.buffer = st.display;
  }
  CallbackData cb{&st, &text};
  const std::string before = text;
  ImGui::InputTextMultiline(id, &st.buffer, size, ImGuiInputTextFlags_CallbackAlways, onEdit, &cb);
  return text != before;
}

}  // namespace attnscope::app
