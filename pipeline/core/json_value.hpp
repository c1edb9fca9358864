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

// A string value (valid UTF-8 without NUL) as a JSON string the way jsonb prints it: quotes,
// \" \\ \b \f \n \r \t, other controls below U+0020 as \u00xx, everything else as it is.
std::string json_quoted(std::string_view utf8);

}  // namespace tidemark::pipeline
