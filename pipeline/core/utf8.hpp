#pragma once
// UTF-8 scanning, in one place: the validator's identifier rules, the text the database
// stores (quarantine entries, errors, escaped names) and cuts at a byte limit all
// read sequences the same way. Pure; no third-party includes.
#include <cstddef>
#include <string>
#include <string_view>

namespace tidemark::pipeline {

// The byte order mark a UTF-8 file may start with (it is not part of the first record).
inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
// Why a record or a text value that starts with one is refused: anywhere but at the start of
// a file it is a file pasted onto another (`cat a b`), and kept it would become part
// of a key (U+FEFF n5 and n5 would be two transactions).
inline constexpr std::string_view kMisplacedBom =
    "starts with a byte order mark (U+FEFF), accepted only at the start of a file";

// The sequence at the start of some bytes.
struct Utf8Sequence {
  // 0 when the bytes are empty or do not start with a well-formed sequence (Unicode table
  // 3-7: no overlongs, no surrogates, nothing above U+10FFFF, none truncated).
  std::size_t length = 0;
  char32_t code_point = 0;
};

// Appends the UTF-8 encoding of `code_point` (a scalar value: the caller has checked it).
void append_utf8(std::string& out, char32_t code_point);

// Decodes the sequence at the start of `bytes`. NUL is well-formed here (code point 0):
// whether it is allowed is the caller's rule.
Utf8Sequence decode_utf8(std::string_view bytes);

// The length of the sequence at the start of `bytes` that a text column stores as it is, or
// 0: PostgreSQL refuses NUL in text as it refuses invalid UTF-8.
std::size_t storable_utf8_length(std::string_view bytes);

// Whether a text column stores `bytes` as they are: valid UTF-8 without NUL.
bool is_storable_text(std::string_view bytes);

// Text PostgreSQL accepts for any input: invalid UTF-8 and NUL become U+FFFD. Sets `changed`
// when anything was replaced.
std::string storable_text(std::string_view bytes, bool& changed);

// How many bytes of valid UTF-8 `text` to keep so that at most `max_bytes` remain and no
// sequence is split: all of it when it fits, else the cut backed up to a sequence's start.
std::size_t utf8_prefix_length(std::string_view text, std::size_t max_bytes);

// A name of any bytes (a file name, a source path, a header row) as valid text, reversibly:
// a backslash becomes "\\", a NUL or a byte that is not part of valid UTF-8 "\xNN" (two
// lowercase hex digits). Valid UTF-8 without backslashes is unchanged.
std::string escape_bytes(std::string_view bytes);
// Appends `bytes` as lowercase hex, two digits a byte ("\xff" -> "ff").
void append_hex(std::string& text, std::string_view bytes);
// The inverse of escape_bytes. A backslash that starts neither escape is kept as is.
std::string unescape_bytes(std::string_view text);

}  // namespace tidemark::pipeline
