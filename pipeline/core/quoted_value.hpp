#pragma once
// A rejected value as a rejection's detail shows it. Every rejection quotes the value it
// refuses (`paid: not a boolean (true or false) in "yes"`), bounded and escaped: the detail
// goes into a text column and a log line whatever the value's bytes, and a huge value must
// not bloat quarantine. Pure; no third-party includes.
#include <cstddef>
#include <string>
#include <string_view>

#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

// How much of a value a detail quotes.
inline constexpr std::size_t kMaxQuotedBytes = 64;

// `text` quoted: at most its first kMaxQuotedBytes bytes ("..." marks a cut), printable
// ASCII kept, '"' and '\\' backslashed, every other byte as \xNN: `"1e3"`, `"acc\x0AX"`.
std::string quoted_value(std::string_view text);

// quoted_value without the quotes: the source text of a JSON value that is not a string
// (`12`, `{"a": 1}`), bounded and escaped the same way.
std::string shown_value(std::string_view text);

// Why a value written as the wrong JSON type is refused, with the value as written:
// `must be a string, not the number 12`, `must be a boolean, not the string "yes"`.
std::string wrong_kind(std::string_view expected, const Field& field);

}  // namespace tidemark::pipeline
