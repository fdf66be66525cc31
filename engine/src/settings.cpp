// The environment settings' table and their strict parsers (settings.h).
#include "attnscope/settings.h"

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "attnscope/error.h"
#include "attnscope/text_bounds.h"

namespace attnscope {

namespace {

enum class Kind { Bytes, Number, Flag, Words, Path };

struct Setting {
  const char* name;
  Kind kind;
  double min = 0, max = 0;          // Number
  std::vector<std::string> words{};  // Words
};

// Every variable the program reads (engine, GPU backend and window): the one list badSettings() checks.
const std::vector<Setting>& settingsTable() {
  static const std::vector<Setting> table = {
      {"ATTNSCOPE_MEMORY_BUDGET", Kind::Bytes},     // scene.h: defaultMemoryBudget
      {"ATTNSCOPE_MAPS_LIMIT", Kind::Bytes},        // compute/tiles.h: mapsLimitBytes
      {"ATTNSCOPE_UI_SCALE", Kind::Number, 0.5, 4},  // the window's scale
      {"ATTNSCOPE_TIMINGS", Kind::Flag},            // the Llama family's stage timings
      {"ATTNSCOPE_TILE_LOG", Kind::Flag},           // the window's tile log (a measuring aid)
      {"ATTNSCOPE_GPU_AS_HARDWARE", Kind::Flag},    // a test aid: llvmpipe taken as a hardware GPU
      {"ATTNSCOPE_GPU_FAULT", Kind::Flag},          // a test aid: the GPU's last head made wrong (run-time check)
      {"ATTNSCOPE_MODEL_MAPS", Kind::Words, 0, 0, {"auto", "drop"}},  // a test aid: the window's forward keeps no maps
      {"ATTNSCOPE_EXPORT_DELAY", Kind::Number, 0, 60},  // a test aid: seconds the window's export waits to start
      {"ATTNSCOPE_FONT", Kind::Path},               // the figures' font
      {"ATTNSCOPE_SHADER_DIR", Kind::Path},         // shaders read from disk
  };
  return table;
}

std::atomic<bool> g_use_defaults{false};

const Setting& settingNamed(const char* variable) {
  for (const Setting& s : settingsTable())
    if (std::string_view(s.name) == variable) return s;
  throw std::logic_error(std::string("settings: no setting named ") + variable);
}

std::string quoted(std::string_view text) { return quoteFragment(std::string(text), 40); }

std::string shortNumber(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// The length of the decimal number at the start of `text` (digits, optionally '.' and digits), 0 if none.
std::size_t decimalLength(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (i == 0) return 0;
  if (i < text.size() && text[i] == '.') {
    std::size_t j = i + 1;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    if (j == i + 1) return 0;  // "4." has no fraction digits
    i = j;
  }
  return i;
}

double decimalValue(std::string_view digits) {
  double value = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), value);  // locale-free; the grammar was checked
  return value;  // a thousand-digit number reads as inf, refused by the callers' range checks
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  return true;
}

std::optional<const char*> rawSetting(const char* variable) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return std::nullopt;
  return text;
}

// The setting's value checked by its kind's parser (throws InputError); only the kind's result is meaningful.
struct Parsed {
  std::size_t bytes = 0;
  double number = 0;
  bool flag = false;
  std::string text;
};
Parsed parse(const Setting& s, std::string_view text) {
  Parsed p;
  switch (s.kind) {
    case Kind::Bytes: p.bytes = parseByteCount(s.name, std::string(text).c_str()); break;
    case Kind::Number: p.number = parseDecimalSetting(s.name, text, s.min, s.max); break;
    case Kind::Flag: p.flag = parseFlagSetting(s.name, text); break;
    case Kind::Words: {
      std::string listed;
      for (const std::string& w : s.words) {
        if (text == w) p.text = w;
        listed += (listed.empty() ? "" : " or ") + w;
      }
      if (p.text.empty()) throw InputError(s.name, listed, quoted(text));
      break;
    }
    case Kind::Path: p.text = std::string(text); break;
  }
  return p;
}

// The setting's parsed value; nullopt when unset, or bad under useDefaultsForBadSettings.
std::optional<Parsed> readSetting(const Setting& s) {
  const std::optional<const char*> raw = rawSetting(s.name);
  if (!raw) return std::nullopt;
  try {
    return parse(s, *raw);
  } catch (const InputError&) {
    if (g_use_defaults.load()) return std::nullopt;
    throw;
  }
}

const Setting& settingOfKind(const char* variable, Kind kind) {
  const Setting& s = settingNamed(variable);
  if (s.kind != kind && !(kind == Kind::Path && s.kind == Kind::Words))
    throw std::logic_error(std::string("settings: ") + variable + " is read as another kind");
  return s;
}

}  // namespace

std::size_t parseByteCount(const char* variable, const char* text_c) {
  const std::string_view text(text_c);
  const std::string expected = "a byte count such as 4G, 512M or 65536 (K, M, G, T: powers of 1024)";
  const std::size_t length = decimalLength(text);
  if (length == 0) throw InputError(variable, expected, quoted(text));
  std::string_view unit = text.substr(length);
  double scale = 1;
  if (!unit.empty() && !equalsIgnoringCase(unit, "b")) {
    const char u = static_cast<char>(unit[0] | 0x20);
    const int power = u == 'k' ? 1 : u == 'm' ? 2 : u == 'g' ? 3 : u == 't' ? 4 : 0;
    const std::string_view rest = unit.substr(1);
    if (power == 0 || !(rest.empty() || equalsIgnoringCase(rest, "b") || equalsIgnoringCase(rest, "ib")))
      throw InputError(variable, expected, quoted(text));
    scale = std::ldexp(1.0, 10 * power);
  }
  const double bytes = std::floor(decimalValue(text.substr(0, length)) * scale);
  if (!(bytes <= static_cast<double>(kMaxSettingBytes)))
    throw InputError(variable, "at most 1 EiB (2^60 bytes)", quoted(text));
  if (bytes < 1) throw InputError(variable, "at least 1 byte", quoted(text));
  return static_cast<std::size_t>(bytes);
}

double parseDecimalSetting(const std::string& variable, std::string_view text, double min, double max) {
  const std::string range = "a number from " + shortNumber(min) + " to " + shortNumber(max);
  const std::size_t length = decimalLength(text);
  if (length == 0 || length != text.size()) throw InputError(variable, range + " (digits and a point)", quoted(text));
  const double value = decimalValue(text);
  if (!(value >= min && value <= max)) throw InputError(variable, range, quoted(text));
  return value;
}

bool parseFlagSetting(const std::string& variable, std::string_view text) {
  if (text == "1") return true;
  if (text == "0") return false;
  throw InputError(variable, "1 (on) or 0 (off)", quoted(text));
}

std::optional<std::size_t> byteCountSetting(const char* variable) {
  const std::optional<Parsed> p = readSetting(settingOfKind(variable, Kind::Bytes));
  return p ? std::optional<std::size_t>(p->bytes) : std::nullopt;
}

std::optional<double> numberSetting(const char* variable) {
  const std::optional<Parsed> p = readSetting(settingOfKind(variable, Kind::Number));
  return p ? std::optional<double>(p->number) : std::nullopt;
}

bool flagSetting(const char* variable) {
  const std::optional<Parsed> p = readSetting(settingOfKind(variable, Kind::Flag));
  return p && p->flag;
}

std::optional<std::string> textSetting(const char* variable) {
  const std::optional<Parsed> p = readSetting(settingOfKind(variable, Kind::Path));
  return p ? std::optional<std::string>(p->text) : std::nullopt;
}

std::vector<std::string> badSettings() {
  std::vector<std::string> lines;
  for (const Setting& s : settingsTable()) {
    const std::optional<const char*> raw = rawSetting(s.name);
    if (!raw) continue;
    try {
      parse(s, *raw);
    } catch (const InputError& e) {
      lines.push_back(e.what());
    }
  }
  return lines;
}

void useDefaultsForBadSettings() { g_use_defaults.store(true); }

}  // namespace attnscope
