#pragma once
// The postgres source's position: the cursor tuple of the last row read, as a JSON array of
// the values' canonical text (each column's ::text output in the source session's fixed
// settings: TimeZone UTC, DateStyle ISO), e.g. ["2026-12-01 06:00:00.25+00","1041"]. Every
// value is a JSON string, whatever its type, so none ever passes through a double: the
// source casts it back to the column's type to resume. Pure; no I/O.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tidemark::connectors::postgres {

using CursorValues = std::vector<std::string>;

// ["v1","v2"]: each value JSON-quoted (pipeline::json_quoted), no spaces.
std::string format_cursor(const CursorValues& values);

// The values of a JSON array of strings (RFC 8259: whitespace between tokens, every string
// escape, surrogate pairs); nullopt for anything else: another JSON value, a non-string
// element, invalid UTF-8, a NUL (no PostgreSQL text holds one), trailing bytes.
std::optional<CursorValues> parse_cursor(std::string_view text);

}  // namespace tidemark::connectors::postgres
