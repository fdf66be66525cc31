// Every environment variable the program reads, in one table, each parsed strictly by one parser of its kind: a
// value that is not exactly what the setting takes ("nan", "inf", "1e400", "4G4", "2x") is refused with one line
// naming the variable, never read as far as it parses nor taken as "unset". The CLI refuses a bad one before any
// work (exit 2); the window shows it and uses the default (useDefaultsForBadSettings).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attnscope/scene/scene.h"

namespace attnscope {

// [SECTION] the parsers (pure: the unit tests call them). Each throws InputError(variable, expected, 'text').

// A byte count: a decimal number (digits, optionally a point and more digits: no sign, exponent or spaces), then
// optionally a unit K, M, G or T (powers of 1024, either case, optionally followed by "B" or "iB") or "B". At
// least 1 byte (rounded down), at most kMaxSettingBytes. "4G", "512M", "1.5G", "4GiB", "65536".
constexpr std::size_t kMaxSettingBytes = std::size_t{1} << 60;  // 1 EiB: budget arithmetic never overflows
std::size_t parseByteCount(const char* variable, const char* text);
// A decimal number as above (no unit) within [min, max].
double parseDecimalSetting(const std::string& variable, std::string_view text, double min, double max);
// "1" (on) or "0" (off).
bool parseFlagSetting(const std::string& variable, std::string_view text);

// [SECTION] the settings, read from the environment each time (tests change them). An unset or empty variable
// reads as unset (nullopt, false). A bad value throws InputError, or after useDefaultsForBadSettings() reads as
// unset. `variable` must be one of the table's (settings.cpp); another is a program error (std::logic_error).
std::optional<std::size_t> byteCountSetting(const char* variable);
std::optional<double> numberSetting(const char* variable);  // within the table's range for it
bool flagSetting(const char* variable);
std::optional<std::string> textSetting(const char* variable);  // a path, or one of the table's words for it

// Every setting of the table that is set and bad, one line each ("ATTNSCOPE_MEMORY_BUDGET: expected ..., got
// 'nan'"), in the table's order.
std::vector<std::string> badSettings();
// From now on a bad setting reads as unset (its default): the window's choice, after showing badSettings().
void useDefaultsForBadSettings();

}  // namespace attnscope
