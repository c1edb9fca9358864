// libFuzzer target: the postgres source's checkpoint parser (connectors/postgres/cursor) on
// arbitrary text. Properties: nothing crashes; what parses formats to a text that parses to
// the same values (so format_cursor's output is a fixed point), and every value is valid
// UTF-8 without NUL, as PostgreSQL text is.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "connectors/postgres/cursor.hpp"
#include "pipeline/core/utf8.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidemark::connectors::postgres;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto values = parse_cursor(input);
  if (!values) return 0;
  for (const auto& value : *values) {
    bool changed = false;
    tidemark::pipeline::storable_text(value, changed);
    if (changed) std::abort();
  }
  const std::string text = format_cursor(*values);
  const auto again = parse_cursor(text);
  if (!again || *again != *values || format_cursor(*again) != text) std::abort();
  return 0;
}
