#include "pipeline/core/failpoint.hpp"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <map>
#include <string>

namespace tidemark::pipeline {

namespace {

struct Armed {
  std::uint64_t fire_at = 1;          // the hit that kills the process
  std::atomic<std::uint64_t> hits{0};
};

// Parsed once; a malformed hit count arms the point at its first hit rather than never,
// so that a typo cannot silently disable a crash test.
std::map<std::string, Armed, std::less<>>& armed_points() {
  static std::map<std::string, Armed, std::less<>> points = [] {
    std::map<std::string, Armed, std::less<>> parsed;
    const char* spec = std::getenv("TIDEMARK_FAILPOINTS");
    std::string_view rest = spec ? spec : "";
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      std::uint64_t fire_at = 1;
      if (const auto colon = item.find(':'); colon != std::string_view::npos) {
        const std::string_view count = item.substr(colon + 1);
        std::from_chars(count.data(), count.data() + count.size(), fire_at);
        if (fire_at == 0) fire_at = 1;
        item = item.substr(0, colon);
      }
      if (!item.empty()) parsed[std::string(item)].fire_at = fire_at;
    }
    return parsed;
  }();
  return points;
}

}  // namespace

void failpoint(std::string_view name) {
  auto& points = armed_points();
  if (points.empty()) return;
  const auto found = points.find(name);
  if (found == points.end()) return;
  if (found->second.hits.fetch_add(1) + 1 == found->second.fire_at) _exit(137);
}

}  // namespace tidemark::pipeline
