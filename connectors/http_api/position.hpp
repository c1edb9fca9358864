#pragma once
// The HTTP source's checkpoint: which page to fetch again and how many of its records are
// already loaded. Pure; no I/O.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tidemark::connectors::http_api {

struct PagePosition {
  // Pages fetched before this one since the source's start (the first page is 0): it orders
  // two positions, which the cursors cannot (an API's cursors need not sort).
  std::uint64_t page = 0;
  // What fetches the page again: the next-cursor value that named it (put into the URL's
  // {checkpoint}), or with link_header the URL itself; "" for the first page.
  std::string cursor;
  // Records of that page already returned (loaded, or quarantined): a resume skips them.
  std::uint64_t consumed = 0;

  friend bool operator==(const PagePosition&, const PagePosition&) = default;
};

// As stored: {"page":3,"cursor":"after:17","consumed":2}, a JSON object with exactly these
// members (the empty text is the start). The cursor is any valid UTF-8.
std::string to_text(const PagePosition& position);
// nullopt for a text to_text did not write.
std::optional<PagePosition> parse_position(std::string_view text);
// Whether `later` lies after `earlier`: by page, then by records consumed.
bool precedes(const PagePosition& earlier, const PagePosition& later);

// `url` with each "{checkpoint}" replaced by the cursor, every byte of it but A-Z a-z 0-9
// - . _ ~ percent-encoded, so that a cursor is one query value whatever it holds.
std::string expand_url(std::string_view url, std::string_view cursor);

}  // namespace tidemark::connectors::http_api
