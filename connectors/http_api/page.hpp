#pragma once
// One page an API answered, split into its records' texts and the cursor of the next page.
// A JSON page is first checked whole by Boost.JSON's parser (with a handler that keeps
// nothing: no number is ever converted), then walked by byte spans, so that each record's
// raw text is exactly the bytes the API sent and its numbers keep their source text for the
// exact-number record decoder. Pure; no I/O.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tidemark::connectors::http_api {

// A dotted path into a JSON page (`data`, `meta.next_cursor`): object member names, in order.
using JsonPath = std::vector<std::string>;

// "a.b.c" -> {a, b, c}; nullopt for an empty text or an empty segment ("a..b", ".a").
std::optional<JsonPath> parse_json_path(std::string_view text);
std::string to_string(const JsonPath& path);

// Objects and arrays nested deeper than this make the page malformed, so that walking it
// never recurses without bound.
inline constexpr std::size_t kMaxPageDepth = 64;

enum class PageFormat {
  kJson,    // one JSON document: an array of records, or an object holding one at `records`
  kNdjson,  // one JSON record per line; blank lines are no record
};

struct RecordText {
  std::string_view raw;  // into the page's body
  std::uint64_t line = 1;    // 1-based line of the body where it starts
  std::uint64_t offset = 0;  // byte offset in the body
};

struct Page {
  std::vector<RecordText> records;
  // The next-cursor field's value (a string's value, a number's source text); nullopt when it
  // is absent, null or "" (the last page).
  std::optional<std::string> next_cursor;
};

// The records of a JSON page (at `records`, or the page itself when `records` is empty) and
// the value at `next` (when given). An error (a malformed page, records that are not an
// array, a next cursor that is not a string or number) names what is wrong and where.
std::variant<Page, std::string> parse_json_page(std::string_view body, const JsonPath& records,
                                                const std::optional<JsonPath>& next);
std::variant<Page, std::string> parse_ndjson_page(std::string_view body);

}  // namespace tidemark::connectors::http_api
