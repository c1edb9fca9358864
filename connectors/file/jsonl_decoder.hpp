#pragma once
// JSON Lines: one JSON object per line, decoded with a SAX handler so numbers keep their
// exact source text (an amount never passes through a double). No I/O.
#include <cstddef>
#include <string_view>

#include "connectors/file/record_layout.hpp"
#include "pipeline/core/record.hpp"

namespace tidemark::connectors::file {

// Objects and arrays nested deeper than this make the line a decode error instead of
// growing the parser's stack without bound.
inline constexpr std::size_t kMaxJsonDepth = 64;

// Decodes one line (without its terminator): the members the layout names, each with its JSON
// kind (a string, a number's exact text, a boolean, an object's or array's JSON text), and the
// other members when the layout asks for them. Anything but a single JSON object, or an object
// that names one of the layout's fields twice, is a record with decode_error set: a line that
// is not valid JSON is "malformed JSON at column N", whatever kind of value it starts like.
pipeline::DecodedRecord decode_jsonl_line(std::string_view line, pipeline::SourcePosition position,
                                          const pipeline::RecordLayout& layout = *built_in_layout());

}  // namespace tidemark::connectors::file
