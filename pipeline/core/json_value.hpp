#pragma once
// Strict JSON (RFC 8259) to the text PostgreSQL's jsonb prints for it (jsonb::text), so that
// a json field's canonical form is what the database stores and reads back: object keys
// ordered by length, then bytes; of duplicate keys the last wins; ", " and ": " between
// items; numbers as numeric prints them (1e2 -> 100, 1.50 -> 1.50, -0 -> 0); strings
// re-escaped as jsonb escapes them. What jsonb refuses is refused here too: \u0000, a lone
// surrogate, numbers numeric cannot hold. Pure; no third-party includes.
#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

// How deep arrays and objects may nest: a bound of Tidemark's own (PostgreSQL's is its stack
// depth), so that parsing never recurses without limit.
inline constexpr std::size_t kMaxJsonDepth = 256;

// One JSON text (surrounding whitespace allowed) in jsonb's canonical form; "null" for a null.
// The rejection's detail names the rule and the byte at fault.
std::variant<std::string, Rejection> canonical_json(std::string_view text);

// A JSON number's source text ("-1.5e3") as numeric prints it ("-1500"): exact, no double.
std::variant<std::string, Rejection> canonical_json_number(std::string_view text);

// How a JSON string writes DEL (U+007F), which JSON allows as it is: jsonb prints it so; a log
// line escapes it, since a terminal would act on it.
enum class JsonDelete { kAsIs, kEscaped };

// Appends `text` as a JSON string the way jsonb prints it: quotes, \" \\ \b \f \n \r \t, other
// controls below U+0020 as \u00xx, everything else as it is. Any bytes are written: a byte
// that is not part of valid UTF-8 becomes \ufffd (one a byte, as a decoder shows it).
void append_json_string(std::string& out, std::string_view text, JsonDelete del = JsonDelete::kAsIs);

// A string value (valid UTF-8 without NUL) as jsonb prints it: append_json_string's text.
std::string json_quoted(std::string_view utf8);

}  // namespace tidemark::pipeline
