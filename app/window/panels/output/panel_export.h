// The Export tab's state (panel_export.cpp): what to write, where, how, and the last export's word.
#pragma once

#include <memory>
#include <string>

#include "attnscope/export/export.h"

namespace attnscope::app {

class ExportWriter;  // export_writer.h: the file written off the UI thread

struct ExportState {
  std::string path = "attnscope_export.png";
  int what = 1, format = 0;
  // A model's or tensor's export: -1 = what is on show (the rollout, else the focused map, else the grid); 0 the
  // focused map, 1 the layer's heads, 2 every layer (the grid), 3 the layer's heads' similarity, 4 the rollout, 5 Find heads' map, 6 the token view.
  int model_what = -1;
  int model_on_show = -1;  // what was on show when model_what was last set (a change of it resets model_what)
  int head = 1;  // 1-based, as shown
  bool annotate = false;
  int dpi = kDefaultDpi;       // a PNG figure's pixels per inch (export.h)
  FigureSize size;             // a figure's width, height and font (0: its own)
  bool cluster_order = false;  // the similarity figure in cluster order: the Export tab's own choice
  std::string message;
  bool failed = false;          // message is an error (shown in red)
  std::string message_request;  // the request message is about: a changed request clears it
  std::shared_ptr<ExportWriter> writer;  // exportWriter(): one export at a time, the Checkpoint tab's figure too
};

// The writer every export of the window goes through (made on first use): the Export tab and the Checkpoint tab's
// grid figure, so that one runs at a time.
ExportWriter& exportWriter(ExportState& state);

}  // namespace attnscope::app
