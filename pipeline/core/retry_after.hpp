#pragma once
// The Retry-After header (RFC 9110 §10.2.3), read by every HTTP client of Tidemark: the
// webhook sink (429/503 from a destination) and the HTTP source (429 from an API).
#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>

namespace tidemark::pipeline {

// delay-seconds is 1*DIGIT: any number of digits is well-formed, so a huge value is capped
// at `cap` rather than converted, which could overflow. The HTTP-date form and anything else
// give nullopt: the caller's own backoff applies.
inline std::optional<std::chrono::seconds> parse_retry_after(std::string_view header, std::chrono::seconds cap) {
  if (header.empty() || !std::all_of(header.begin(), header.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::chrono::seconds::rep seconds = 0;
  for (char digit : header) {
    seconds = seconds * 10 + (digit - '0');  // below 10 × cap + 9: no overflow
    if (seconds >= cap.count()) return cap;
  }
  return std::chrono::seconds(seconds);
}

}  // namespace tidemark::pipeline
