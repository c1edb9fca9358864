// libFuzzer target: the validator on arbitrary field values. The input is up to five
// LF-separated fields (transaction_id, source_revision, amount, account_id, occurred_at);
// a field's first byte picks how it arrived: '~' absent, '#' a JSON number, else a string.
// An accepted record must be what numeric(12,2), bigint and the identifier rules can hold,
// and its canonical amount and timestamp must parse back to themselves.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <variant>

#include "pipeline/core/validate.hpp"
#include "tests/support/built_in_record.hpp"

namespace {

using tidemark::pipeline::Field;
using tidemark::pipeline::FieldKind;

std::optional<Field> field(std::string_view text) {
  if (!text.empty() && text.front() == '~') return std::nullopt;
  if (!text.empty() && text.front() == '#') return Field{std::string(text.substr(1)), FieldKind::kNumber};
  return Field{std::string(text), FieldKind::kString};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tidemark::pipeline;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  DecodedRecord decoded;
  decoded.raw = std::string(rest);
  decoded.fields.resize(5);  // the built-in layout: transaction_id ... occurred_at
  for (auto* target = decoded.fields.data(); target != decoded.fields.data() + 5; ++target) {
    const auto newline = rest.find('\n');
    *target = field(rest.substr(0, newline));
    rest = newline == std::string_view::npos ? std::string_view{} : rest.substr(newline + 1);
  }
  const Validated result = validate(decoded);
  if (const Record* record = std::get_if<Record>(&result)) {
    if (record->transaction_id.empty() || record->transaction_id.size() > 4 * 128) std::abort();
    if (record->source_revision < 0) std::abort();
    if (record->amount.cents > 999999999999 || record->amount.cents < -999999999999) std::abort();
    const auto reparsed = parse_amount(record->amount.to_string());
    if (!std::holds_alternative<Amount>(reparsed) || std::get<Amount>(reparsed) != record->amount) std::abort();
    if (record->occurred_at_us) {
      const auto again = parse_timestamp(format_timestamp(*record->occurred_at_us));
      if (!std::holds_alternative<std::int64_t>(again) || std::get<std::int64_t>(again) != *record->occurred_at_us) {
        std::abort();
      }
    }
  }
  return 0;
}
