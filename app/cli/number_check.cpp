#include "app/cli/number_check.hpp"

#include <algorithm>
#include <charconv>
#include <string>

namespace tidemark::app {

CLI::Validator whole_number(long long min, long long max) {
  const std::string rule = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, rule](std::string& text) -> std::string {
        long long value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
          return c >= '0' && c <= '9';
        });
        if (digits && error == std::errc{} && end == text.data() + text.size() && value >= min && value <= max) {
          return "";
        }
        return "expected " + rule + ", got \"" + text + "\"";
      },
      "NUMBER " + std::to_string(min) + "-" + std::to_string(max));
}

}  // namespace tidemark::app
