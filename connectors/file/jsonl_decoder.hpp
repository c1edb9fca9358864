#pragma once
// JSON Lines: one JSON object per line, decoded with a SAX handler so numbers keep their
// exact source text (an amount never passes through a double). No I/O.
#include <cstddef>
#include <string_view>

#include "pipeline/core/record.hpp"

namespace tidemark::connectors::file {

// Objects and arrays nested deeper than this make the line a decode error instead of
// growing the parser's stack without bound.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Decodes one line (without its terminator). Anything but a single JSON object, or an object
// that names one of the five contract fields twice, is a record with decode_error set.
pipeline::DecodedRecord decode_jsonl_line(std::string_view line, pipeline::SourcePosition position);

}  // namespace tidemark::connectors::file
