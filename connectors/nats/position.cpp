#include "connectors/nats/position.hpp"

#include <charconv>
#include <cstdio>
#include <ctime>

namespace tidemark::connectors::nats {

namespace {

constexpr std::int64_t kNanosPerSecond = 1'000'000'000;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// YYYY-MM-DDTHH:MM:SS.fffffffffZ exactly, as format_created writes it.
bool is_created_text(std::string_view text) {
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.dddddddddZ";
  if (text.size() != kShape.size()) return false;
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    if (kShape[i] == 'd' ? !is_digit(text[i]) : text[i] != kShape[i]) return false;
  }
  return true;
}

}  // namespace

std::string format_created(std::int64_t nanoseconds) {
  // Floor division: a time before 1970 still gets a fraction in [0, 1 s).
  std::int64_t seconds = nanoseconds / kNanosPerSecond;
  std::int64_t fraction = nanoseconds % kNanosPerSecond;
  if (fraction < 0) {
    fraction += kNanosPerSecond;
    --seconds;
  }
  const std::time_t time = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&time, &utc);
  char text[128];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<long long>(fraction));
  return text;
}

std::string to_text(const StreamPosition& position) {
  return std::to_string(position.sequence) + "@" + position.created;
}

std::optional<StreamPosition> parse_position(std::string_view text) {
  const auto at = text.find('@');
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  const std::string_view sequence = text.substr(0, at);
  // Decimal without sign or leading zeros: the one spelling to_text writes.
  if (sequence.size() > 1 && sequence[0] == '0') return std::nullopt;
  StreamPosition position;
  const auto [end, error] = std::from_chars(sequence.data(), sequence.data() + sequence.size(), position.sequence);
  if (error != std::errc{} || end != sequence.data() + sequence.size()) return std::nullopt;
  const std::string_view created = text.substr(at + 1);
  if (!is_created_text(created)) return std::nullopt;
  position.created = std::string(created);
  return position;
}

bool precedes(const StreamPosition& earlier, const StreamPosition& later) {
  if (earlier.created != later.created) return earlier.created < later.created;
  return earlier.sequence < later.sequence;
}

}  // namespace tidemark::connectors::nats
