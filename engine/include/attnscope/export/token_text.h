// One token's attention over a sequence as coloured text (the window's token view; BertViz's and CircuitsVis's
// coloured tokens): as a figure (PNG, SVG) and as numbers (CSV, NPY).
#pragma once

#include <string>
#include <vector>

#include "attnscope/export/export.h"
#include "attnscope/export/export_layout.h"

namespace attnscope {

struct TokenText {
  std::string title;                     // "GPT-2 layer 6, head 4: attention from token 12 'cat'"
  std::string scale_label;               // the colour bar's: "attention weight"
  std::string value_name = "weight";     // the CSV's value column
  std::vector<std::string> tokens;       // n, as text
  std::vector<float> values;             // n: what each token's colour shows
  std::vector<char> masked;              // n, 1 = not visible (a key after a causal query); empty = none
  int picked = -1;                       // the token the values are of (outlined), -1 = none
  int dpi = kLayoutDpi;                  // a PNG's pixels per inch (kFitDpi: the default, lowered to fit)
  FigureSize size;                       // width (the text wraps to it; default 8 in) and font; height ignored
};

// The figure: the title, then the tokens in reading order on chips of viridis(value / top) (top: the largest
// unmasked value, 1 when none is above 0), masked ones in kMaskedColor, the picked one outlined in red, wrapped
// at the page's width; the colour bar 0..top at the right. Throws InputError("figure", ...) when the text would be
// taller than kMaxImageSide (the CSV and NPY hold any length), InputError("values" | "masked", ...) for lengths
// that are not the tokens'.
Figure tokenTextFigure(const TokenText& text);
FigureLayout tokenTextLayout(const TokenText& text);
// `format`: PNG or SVG (the figure), CSV (`position,token,<value_name>,masked`, one row a token, positions from
// 0, masked values 0) or NPY ((n,) float32, masked 0).
std::string tokenTextBytes(const TokenText& text, ExportFormat format);

}  // namespace attnscope
