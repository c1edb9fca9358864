#pragma once
// Error texts as Tidemark stores and shows them: bounded and storable in a text column, with
// the secrets of URLs removed. The relay's last_error, `outbox list`, the HTTP source's errors
// and every status shown go through these, so one rule holds wherever an error is kept.
#include <cstddef>
#include <string>
#include <string_view>

namespace tidemark::pipeline {

// last_error and the logs keep at most this much of an error text.
inline constexpr std::size_t kMaxErrorBytes = 1000;

// `text` as PostgreSQL stores it in a text column whatever its bytes: invalid UTF-8 and NUL
// become U+FFFD, and at most `max_bytes` bytes are kept, cut between characters ("…" marks
// the cut). A receiver's answer goes into last_error through this.
std::string bounded_error_text(std::string_view text, std::size_t max_bytes = kMaxErrorBytes);

// `text` with the credentials and query strings of the URLs in it redacted:
// "http://user:pass@host/p?token=x" becomes "http://***@host/p?***". Errors pass through it
// before they reach last_error and the logs, and `outbox list` shows last_error through it.
std::string redact_urls(std::string_view text);

}  // namespace tidemark::pipeline
