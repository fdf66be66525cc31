// The scripted mode's own commands (scripts/script_commands.txt) and the window opened from its command line
// (scripts/open_command_line*.txt, four runs by run_gui_test.sh): each command's effect read from the layouts the
// script wrote, every expected text written here from the script's own steps.
#include <fstream>
#include <string>

#include "gui_check.h"

namespace gui {

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string readText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

void checkScriptCommands(Checker& c, const std::string& dir) {
  // `names`: one target a line, the file bar's and the worked example's heads among them.
  const std::string names = readText(dir + "/names.txt");
  c.expect(contains(names, "\nfile.open\n") && contains(names, "\nhead1.map\n") && contains(names, "\nwalk.next\n"),
           "names lists the targets on screen (file.open, head1.map, walk.next)");

  // Keys: "abc.json", Home + Delete: "bc.json"; End + Backspace: "bc.jso"; 7, Space, 9 typed: "bc.jso7 9".
  const std::string keys = note(loadLayout(dir + "/layout_keys.json"), "file.message");
  c.expect(contains(keys, "'bc.jso7 9'"), "Home, Delete, End, Backspace, 7, Space, 9 edited the path: '" + keys + "'");

  // The right click's menu muted head 2; Shift+click on head 2's mute muted every other (head 1).
  const std::string menu = note(loadLayout(dir + "/layout_menu.json"), "heads.muted_effect.text");
  c.expect(contains(menu, "muted head 2:"), "Mute in head 2's right-click menu: '" + menu + "'");
  const std::string shift = note(loadLayout(dir + "/layout_shift.json"), "heads.muted_effect.text");
  c.expect(contains(shift, "muted head 1:"), "Shift+click on head 2's mute leaves it alone: '" + shift + "'");

  // A double click on head 1's map enlarged it: the way back shown, head 2's map gone.
  const nlohmann::json twice = loadLayout(dir + "/layout_double.json");
  c.expect(twice.contains("heads.back") && !twice.contains("head1.map"), "a double click enlarged head 1");

  // Next, clicked right after switching back to the Steps tab: step 2.
  const std::string step = note(loadLayout(dir + "/layout_tab.json"), "walk.step");
  c.expect(step == "2", "Next clicked right after the tab switch (waited for): step " + step);

  // The quoted name with a space, double-clicked in the browser: the scene opened.
  const std::string opened = note(loadLayout(dir + "/layout_quoted.json"), "file.message");
  c.expect(opened == "Opened " + dir + "/pick/my scene.json", "\"chooser.entry.my scene.json\" opened: '" + opened + "'");

  // Resized to 1000 x 700: the screenshot that size, the panes inside it, the long message one line, cut.
  const Image resized = loadPng(dir + "/resized.png");
  c.expect(resized.w == 1000 && resized.h == 700,
           "resize 1000 700: " + std::to_string(resized.w) + " x " + std::to_string(resized.h));
  const Checker small{Image{}, loadLayout(dir + "/layout_resized.json")};
  const std::vector<float> message = small.rect("file.message"), open = small.rect("file.open");
  c.expect(message[2] <= 1000 && small.rect("status.backend." + std::string(c.layout.contains("status.backend.gpu")
                                                                                ? "gpu"
                                                                                : "cpu"))[3] <= 700,
           "the file bar and the status bar inside the smaller window");
  // One line: no taller than the buttons beside it (a wrapped message was 2-3 lines, pushing every pane down).
  c.expect(message[3] - message[1] <= open[3] - open[1] + 0.5f,
           "the long message is one line: " + std::to_string(message[3] - message[1]) + " px tall, the buttons " +
               std::to_string(open[3] - open[1]));
  const std::string whole = note(small.layout, "file.message"), shown = note(small.layout, "file.message.shown");
  c.expect(contains(whole, "this/one.json") && !shown.empty() && shown.size() < whole.size() &&
               contains(shown, "\xE2\x80\xA6"),
           "cut with an ellipsis ('" + shown + "'), the whole on hover");
  const Checker muted{Image{}, loadLayout(dir + "/layout_resized_muted.json")};
  bool effect_clipped = false;
  for (const auto& id : muted.layout.value("clipped", nlohmann::json::array()))
    effect_clipped = effect_clipped || id == "heads.muted_effect.text";
  c.expect(muted.layout.contains("heads.mute_mode") && contains(note(muted.layout, "heads.muted_effect.text"), "muted heads 2 ") &&
               !effect_clipped,
           "a muted head's effect line at 1000 x 700 fits its room: '" + note(muted.layout, "heads.muted_effect.text") + "'");
}

void checkOpenCommandLine(Checker& c, const std::string& dir) {
  // attnscope CKPT --text "hello there cats!": the checkpoint run on that text (11 tokens by the fixture's
  // tokenizer, 2 layers x 3 heads), its grid in the centre.
  const nlohmann::json run = loadLayout(dir + "/layout_checkpoint.json");
  c.expect(note(run, "subject.text") == "hello there cats!" && note(run, "subject.tokens") == "11" &&
               run.contains("model.tile.1.2"),
           "the checkpoint ran on --text: '" + note(run, "status.subject") + "'");
  // attnscope att.npy --tokens tokens.json: the (2, 3, 6, 6) tensor in the centre with its 6 tokens.
  const nlohmann::json tensor = loadLayout(dir + "/layout_tensor.json");
  c.expect(note(tensor, "subject.pane") == "tensor" && note(tensor, "subject.tokens") == "6" &&
               note(tensor, "subject.tensor.shape") == "(2, 3, 6, 6)" && tensor.contains("model.tile.1.2"),
           "the tensor opened with --tokens: '" + note(tensor, "status.subject") + "'");
  // attnscope --scene att.npy: the Open form (once a NUL-byte error), saying it needs 6 tokens.
  const nlohmann::json form = loadLayout(dir + "/layout_form.json");
  c.expect(form.contains("open.form") && note(form, "open.tokens_needed") == "6",
           "--scene att.npy opens the form, which asks for 6 tokens: '" + note(form, "open.tokens_needed") + "'");
  // attnscope "my scene.json": sentence_heads.json's 10 tokens and 4 heads, its path in the file bar.
  const nlohmann::json scene = loadLayout(dir + "/layout_scene.json");
  c.expect(contains(note(scene, "status.subject"), "n = 10, heads = 4") && scene.contains("head3.map"),
           "the scene file opened: '" + note(scene, "status.subject") + "'");
}

void checkExportBackground(Checker& c, const std::string& dir) {
  // Three frames after Export the window drew the tab saying it is writing: the file is made on another thread
  // (the writer waits a second first, ATTNSCOPE_EXPORT_DELAY=1), where it once took the frame.
  const nlohmann::json writing = loadLayout(dir + "/layout_writing.json");
  c.expect(writing.contains("export.writing"), "the window drew frames while the export was written, saying so");
  const std::string refused = note(loadLayout(dir + "/layout_refused.json"), "export.error");
  c.expect(refused.rfind("Not started: still writing " + dir + "/first.png", 0) == 0,
           "a second Export while one runs is refused with a word: '" + refused + "'");
  const std::string wrote = note(c.layout, "export.message");
  c.expect(!c.layout.contains("export.writing") && wrote == "Wrote " + dir + "/first.png",
           "then the tab says it wrote the file: '" + wrote + "'");
  const Image first = loadPng(dir + "/first.png");
  c.expect(first.w > 100 && first.h > 100, "first.png is a whole PNG: " + std::to_string(first.w) + " x " +
                                                std::to_string(first.h));
}

void checkModelGemma2(Checker& c) {
  // The grid drawn (3 layers x 4 heads), the layer button greyed out with its reason, and its click changed
  // nothing: the centre still shows the model.
  c.expect(c.layout.contains("model.tile.2.3") && note(c.layout, "subject.card.family") == "Gemma 2",
           "the Gemma 2 grid: '" + note(c.layout, "status.subject") + "'");
  const std::string why = note(c.layout, "model.open_layer.why_not");
  c.expect(contains(why, "Gemma 2 soft-caps its attention scores") && contains(why, "do not open as scenes"),
           "Open layer as scene says why not: '" + why + "'");
  c.expect(note(c.layout, "pane.left.title") == "Model" && contains(note(c.layout, "status.subject"), "Gemma 2"),
           "the click on the greyed-out button left the model on show: '" + note(c.layout, "status.subject") + "'");
}

}  // namespace gui
