// The headless subcommands. Each takes its arguments and returns the exit status; errors are thrown as
// InputError (bad usage or bad input) and turned into one line on stderr and exit status 2 by main.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "attnscope/export/contrast.h"
#include "attnscope/export/export.h"
#include "cli/cli_args.h"

namespace attnscope::cli {

// A command's JSON output: into `path` (written atomically) when given, else to standard output
// (cli_stdout.cpp, as the two below).
void writeOutput(const std::string& text, const std::optional<std::string>& path);
// Bytes to standard output; a failed or short write throws InputError("standard output", ...).
void writeStdout(std::string_view bytes);
// Flushes and closes standard output, a command's last act: throws as writeStdout when a write failed, now or
// before (a printf's error is only kept in the stream's flag).
void closeStdout();

// A score that may be undefined (a head type's on too short a text), as JSON: the number, or null.
inline nlohmann::ordered_json optionalJson(const std::optional<double>& x) {
  return x ? nlohmann::ordered_json(*x) : nlohmann::ordered_json(nullptr);
}

// --contrast fixed|shared|head|row (default fixed) and --log: how a figure colours weights (contrast.h), as the
// window's colour scale; a bad value is an InputError naming --contrast (cli_export.cpp).
MapContrast takeContrast(Args& args);
// --dpi N: a PNG figure's pixels per inch, kMinDpi to kMaxDpi (export.h), kFitDpi when absent (kDefaultDpi or
// the largest below it that the figure fits); and its help.
int takeDpi(Args& args);
std::string dpiHelp(int column);
// --width IN, --height IN and --font-size PT: a figure's page (FigureSize, export.h), checked (checkFigureSize);
// all 0 when absent. And their help.
FigureSize takeFigureSize(Args& args);
std::string figureSizeHelp(int column);
// The first of the three options a size gives ("--width" before "--height" before "--font-size"): errors name it.
const char* figureSizeOption(const FigureSize& size);
// The two options' lines for a command's --help, their text starting at `column` as the command's others.
std::string contrastHelp(int column);

int runCompute(Args& args);      // cli_compute.cpp
int runWalkthrough(Args& args);  // cli_walkthrough.cpp
int runExport(Args& args);       // cli_export.cpp
int runBench(Args& args);        // cli_bench.cpp
int runAnalyze(Args& args);      // cli_analyze.cpp
int runModel(Args& args);        // cli_model.cpp
int runTokenize(Args& args);     // cli_tokenize.cpp
int runImport(Args& args);       // cli_import.cpp
int runView(Args& args);         // cli_view.cpp

}  // namespace attnscope::cli

namespace attnscope {
// No subcommand: the window (window_main.cpp). `args` are the options after the program name.
int runWindow(const std::vector<std::string>& args);
}  // namespace attnscope
