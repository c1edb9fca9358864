#include "pipeline/core/validate.hpp"

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "pipeline/core/json_value.hpp"
#include "pipeline/core/quoted_value.hpp"
#include "pipeline/core/utf8.hpp"

namespace tidemark::pipeline {

namespace {

constexpr std::size_t kMaxIdentifierCodePoints = 128;
constexpr int kMaxTimestampFractionDigits = 6;
constexpr std::int64_t kMicrosPerSecond = 1'000'000;
constexpr std::int64_t kSecondsPerDay = 86'400;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

Rejection reject(std::string_view field, std::string_view rule) {
  return Rejection{std::string(field) + ": " + std::string(rule), std::string(field)};
}

std::optional<std::string> identifier_problem(std::string_view text) {
  if (text.empty()) return std::string("empty");
  return text_problem(text, kMaxIdentifierCodePoints);
}

std::variant<std::string, Rejection> validate_identifier(std::string_view name, const Field& field) {
  if (!is_text_kind(field.kind)) return reject(name, wrong_kind("a string", field));
  if (auto problem = identifier_problem(field.text)) return reject(name, *problem);
  return field.text;
}

// JSON may carry the revision as a number or as a string; either way the text must be
// decimal digits only, so "1.0", "1e3", "-1" and " 1" are refused whatever the kind.
std::variant<std::int64_t, Rejection> validate_revision(std::string_view kName, const Field& field) {
  if (field.kind != FieldKind::kNumber && !is_text_kind(field.kind)) {
    return reject(kName, wrong_kind("an integer", field));
  }
  auto revision = parse_integer(field.text, /*allow_minus=*/false);
  if (const auto* rejection = std::get_if<Rejection>(&revision)) return reject(kName, rejection->detail);
  return revision;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t year, unsigned month, unsigned day) {
  year -= month <= 2 ? 1 : 0;
  const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
  const auto year_of_era = static_cast<unsigned>(year - era * 400);
  const unsigned day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + static_cast<std::int64_t>(day_of_era) - 719468;
}

struct CivilDate {
  std::int64_t year;
  unsigned month;
  unsigned day;
};

// Inverse of days_from_civil.
CivilDate civil_from_days(std::int64_t days) {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto day_of_era = static_cast<unsigned>(days - era * 146097);
  const unsigned year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const unsigned day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const unsigned shifted_month = (5 * day_of_year + 2) / 153;
  const unsigned day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
  const unsigned month = shifted_month < 10 ? shifted_month + 3 : shifted_month - 9;
  return {static_cast<std::int64_t>(year_of_era) + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

bool is_leap_year(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

unsigned days_in_month(int year, unsigned month) {
  constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap_year(year) ? 29 : kDays[month - 1];
}

// Reads exactly `count` digits at `pos`; nullopt if any is not a digit or the text ends.
std::optional<int> fixed_digits(std::string_view text, std::size_t pos, std::size_t count) {
  if (pos + count > text.size()) return std::nullopt;
  int value = 0;
  for (std::size_t i = pos; i < pos + count; ++i) {
    if (!is_digit(text[i])) return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

bool char_at(std::string_view text, std::size_t pos, char expected) {
  return pos < text.size() && text[pos] == expected;
}

// Which part of a calendar date of years 0001-9999 is out of range, if any.
std::optional<std::string_view> date_out_of_range(int year, int month, int day) {
  if (year < 1) return "year";
  if (month < 1 || month > 12) return "month";
  if (day < 1 || static_cast<unsigned>(day) > days_in_month(year, static_cast<unsigned>(month))) return "day";
  return std::nullopt;
}

}  // namespace

// Each problem quotes the text (quoted_value): every rejection shows the value it refuses.
std::optional<std::string> text_problem(std::string_view text, std::size_t max_characters) {
  const auto problem = [text](std::string rule) { return std::move(rule) + " in " + quoted_value(text); };
  if (text.starts_with(kUtf8Bom)) return problem(std::string(kMisplacedBom));
  std::size_t code_points = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const Utf8Sequence sequence = decode_utf8(text.substr(i));
    if (sequence.length == 0) return problem("invalid UTF-8 at byte " + std::to_string(i));
    // C0, DEL and C1 controls.
    if (const char32_t c = sequence.code_point; c < 0x20 || (c >= 0x7F && c <= 0x9F)) {
      return problem("control character at byte " + std::to_string(i));
    }
    i += sequence.length;
    ++code_points;
  }
  if (code_points > max_characters) {
    return problem("more than " + std::to_string(max_characters) + " characters (" + std::to_string(code_points) +
                   ")");
  }
  return std::nullopt;
}

std::variant<std::int64_t, Rejection> parse_integer(std::string_view text, bool allow_minus) {
  if (text.empty()) return Rejection{"empty"};
  const bool negative = allow_minus && text.front() == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty()) {
    return Rejection{"not an integer (an optional '-', then decimal digits) in " + quoted_value(text)};
  }
  // The magnitude in unsigned arithmetic, so that -2^63 is reachable without overflow.
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  const std::uint64_t limit = negative ? kMax + 1 : kMax;
  std::uint64_t magnitude = 0;
  for (char c : digits) {
    if (!is_digit(c)) {
      return Rejection{allow_minus ? "not an integer (an optional '-', then decimal digits) in " + quoted_value(text)
                                   : "not an integer of decimal digits only in " + quoted_value(text)};
    }
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (magnitude > (limit - digit) / 10) {
      return Rejection{negative ? "less than -9223372036854775808 in " + quoted_value(text)
                                : "greater than 9223372036854775807 in " + quoted_value(text)};
    }
    magnitude = magnitude * 10 + digit;
  }
  // Two's complement: 0 - magnitude is exact for every magnitude up to 2^63.
  return negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
}

std::variant<std::string, Rejection> parse_decimal(std::string_view text, int precision, int scale) {
  // Strict on purpose (docs/rules.md rule 5, no silent repair): at least one integer digit, and a
  // point must be followed by a digit, so ".5", "5." and "130.000" (scale 2) are refused like "1e3".
  const auto malformed = [&] {
    const std::string shape =
        scale == 0 ? "[+-]digits" : "[+-]digits[.1-" + std::to_string(scale) + " digits]";
    return Rejection{"not a plain decimal (" + shape + ") in " + quoted_value(text)};
  };
  if (text.empty()) return Rejection{"empty"};
  std::size_t pos = 0;
  const bool negative = text[0] == '-';
  if (text[0] == '-' || text[0] == '+') ++pos;
  const std::size_t integer_start = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  const std::size_t integer_end = pos;
  if (integer_end == integer_start) return malformed();
  std::size_t fraction_start = pos;
  std::size_t fraction_end = pos;
  if (pos < text.size() && text[pos] == '.') {
    fraction_start = ++pos;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    fraction_end = pos;
    if (fraction_end == fraction_start) return malformed();
  }
  if (pos != text.size()) return malformed();

  // Leading zeros hold no value: what counts is whether numeric(p,s) can store the number,
  // which allows p - s digits before the point (none at all when p = s: "0.5" is fine).
  std::size_t significant_start = integer_start;
  while (significant_start < integer_end && text[significant_start] == '0') ++significant_start;
  const auto integer_digits = static_cast<std::size_t>(precision - scale);
  if (integer_end - significant_start > integer_digits) {
    return Rejection{"more than " + std::to_string(integer_digits) + " integer digits in " + quoted_value(text)};
  }
  if (fraction_end - fraction_start > static_cast<std::size_t>(scale)) {
    return Rejection{"more than " + std::to_string(scale) + " fraction digits in " + quoted_value(text)};
  }
  // numeric prints exactly `scale` fraction digits, at least one integer digit and no sign on zero.
  std::string canonical;
  canonical.reserve(static_cast<std::size_t>(precision) + 3);
  if (significant_start == integer_end) {
    canonical += '0';
  } else {
    canonical.append(text.substr(significant_start, integer_end - significant_start));
  }
  if (scale > 0) {
    canonical += '.';
    canonical.append(text.substr(fraction_start, fraction_end - fraction_start));
    canonical.append(static_cast<std::size_t>(scale) - (fraction_end - fraction_start), '0');
  }
  if (negative && canonical.find_first_of("123456789") != std::string::npos) canonical.insert(0, 1, '-');
  return canonical;
}

std::variant<std::int64_t, Rejection> parse_date(std::string_view text) {
  const auto year = fixed_digits(text, 0, 4);
  const auto month = fixed_digits(text, 5, 2);
  const auto day = fixed_digits(text, 8, 2);
  if (text.size() != 10 || !year || !char_at(text, 4, '-') || !month || !char_at(text, 7, '-') || !day) {
    return Rejection{"not a date (YYYY-MM-DD) in " + quoted_value(text)};
  }
  if (const auto part = date_out_of_range(*year, *month, *day)) {
    return Rejection{std::string(*part) + " out of range in " + quoted_value(text)};
  }
  return days_from_civil(*year, static_cast<unsigned>(*month), static_cast<unsigned>(*day));
}

std::variant<std::int64_t, Rejection> parse_timestamp(std::string_view text) {
  const auto malformed = [&] {
    return Rejection{"not an RFC 3339 timestamp (YYYY-MM-DDTHH:MM:SS[.ffffff] then Z or +HH:MM) in " +
                     quoted_value(text)};
  };
  const auto out_of_range = [&](std::string_view part) {
    return Rejection{std::string(part) + " out of range in " + quoted_value(text)};
  };
  // Only 'T'/'t' separate date and time: RFC 3339 merely permits applications to use a space.
  const auto year = fixed_digits(text, 0, 4);
  const auto month = fixed_digits(text, 5, 2);
  const auto day = fixed_digits(text, 8, 2);
  const auto hour = fixed_digits(text, 11, 2);
  const auto minute = fixed_digits(text, 14, 2);
  const auto second = fixed_digits(text, 17, 2);
  if (!year || !char_at(text, 4, '-') || !month || !char_at(text, 7, '-') || !day ||
      !(char_at(text, 10, 'T') || char_at(text, 10, 't')) || !hour || !char_at(text, 13, ':') ||
      !minute || !char_at(text, 16, ':') || !second) {
    return malformed();
  }
  std::size_t pos = 19;
  std::int64_t micros = 0;
  if (char_at(text, pos, '.')) {
    const std::size_t start = ++pos;
    while (pos < text.size() && is_digit(text[pos])) ++pos;
    const std::size_t digits = pos - start;
    if (digits == 0) return malformed();
    // PostgreSQL would round a 7th digit away: refuse rather than repair.
    if (digits > kMaxTimestampFractionDigits) {
      return Rejection{"more than 6 fraction digits in " + quoted_value(text)};
    }
    for (std::size_t i = 0; i < kMaxTimestampFractionDigits; ++i) {
      micros = micros * 10 + (i < digits ? text[start + i] - '0' : 0);
    }
  }
  std::int64_t offset_seconds = 0;
  if (pos == text.size()) return Rejection{"no UTC offset (Z or +HH:MM) in " + quoted_value(text)};
  if (text[pos] == 'Z' || text[pos] == 'z') {
    ++pos;
  } else if (text[pos] == '+' || text[pos] == '-') {
    const auto offset_hour = fixed_digits(text, pos + 1, 2);
    const auto offset_minute = fixed_digits(text, pos + 4, 2);
    if (!offset_hour || !char_at(text, pos + 3, ':') || !offset_minute) return malformed();
    if (*offset_hour > 23 || *offset_minute > 59) return out_of_range("offset");
    offset_seconds = (text[pos] == '-' ? -1 : 1) * (*offset_hour * 3600 + *offset_minute * 60);
    pos += 6;
  } else {
    return malformed();
  }
  if (pos != text.size()) return malformed();

  if (const auto part = date_out_of_range(*year, *month, *day)) return out_of_range(*part);
  if (*hour > 23) return out_of_range("hour");
  if (*minute > 59) return out_of_range("minute");
  // A leap second (60) is refused: PostgreSQL would silently roll it into the next minute.
  if (*second > 59) return out_of_range("second");

  const std::int64_t days = days_from_civil(*year, static_cast<unsigned>(*month), static_cast<unsigned>(*day));
  const std::int64_t local_seconds = days * kSecondsPerDay + *hour * 3600 + *minute * 60 + *second;
  const std::int64_t utc_micros = (local_seconds - offset_seconds) * kMicrosPerSecond + micros;
  // An offset can carry a valid local time past year 1 or 9999 in UTC, which the canonical
  // form (four-digit years) cannot print and timestamptz would hold as a BC date.
  if (utc_micros < kMinTimestampMicros || utc_micros > kMaxTimestampMicros) {
    return Rejection{"outside 0001-01-01T00:00:00Z ... 9999-12-31T23:59:59.999999Z in UTC in " + quoted_value(text)};
  }
  return utc_micros;
}

std::string format_timestamp(std::int64_t utc_micros) {
  // Floor division so that instants before the epoch land on the right day and second.
  constexpr std::int64_t kMicrosPerDay = kSecondsPerDay * kMicrosPerSecond;
  std::int64_t days = utc_micros / kMicrosPerDay;
  std::int64_t micros_of_day = utc_micros % kMicrosPerDay;
  if (micros_of_day < 0) {
    micros_of_day += kMicrosPerDay;
    --days;
  }
  const CivilDate date = civil_from_days(days);
  const std::int64_t seconds_of_day = micros_of_day / kMicrosPerSecond;
  // Digit by digit rather than by snprintf, which was 5% of a run's CPU (one call per
  // timestamp field of every record). Fixed widths: the instants are of years 0001-9999.
  std::string text = "0000-00-00T00:00:00.000000Z";
  const auto put = [&text](std::size_t end, std::int64_t value, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i, value /= 10) text[end - 1 - i] = static_cast<char>('0' + value % 10);
  };
  put(4, date.year, 4);
  put(7, date.month, 2);
  put(10, date.day, 2);
  put(13, seconds_of_day / 3600, 2);
  put(16, seconds_of_day / 60 % 60, 2);
  put(19, seconds_of_day % 60, 2);
  put(26, micros_of_day % kMicrosPerSecond, 6);
  return text;
}

std::string describe_differences(const EntityDeclaration& entity, const EntityRecord& here,
                                 const EntityRecord& other, std::string_view there) {
  const auto shown = [](const std::optional<std::string>& value) {
    return value ? quoted_value(*value) : std::string("absent");
  };
  std::string out;
  const auto add = [&](std::string_view name, const std::optional<std::string>& mine,
                       const std::optional<std::string>& theirs) {
    if (mine == theirs) return;
    if (!out.empty()) out += "; ";
    out += std::string(name) + " " + shown(mine) + " here, " + shown(theirs) + " " + std::string(there);
  };
  for (std::size_t i = 0; i < entity.fields.size(); ++i) {
    const std::optional<std::string> none;
    add(entity.fields[i].name, i < here.values.size() ? here.values[i] : none,
        i < other.values.size() ? other.values[i] : none);
  }
  add(kExtraColumn, here.extra, other.extra);
  return out;
}

std::optional<std::int64_t> valid_revision(const DecodedRecord& decoded) {
  if (decoded.decode_error) return std::nullopt;
  const std::optional<Field>& field = decoded.field(kRevisionField);
  if (!field) return std::nullopt;
  const auto revision = validate_revision("", *field);
  if (std::holds_alternative<Rejection>(revision)) return std::nullopt;
  return std::get<std::int64_t>(revision);
}

RecordLayout record_layout(const EntityDeclaration& entity) {
  RecordLayout layout;
  layout.names = {entity.key, entity.revision};
  layout.required = {true, true};
  for (const FieldSpec& field : entity.fields) {
    layout.names.push_back(field.name);
    layout.required.push_back(field.required);
  }
  layout.undeclared = entity.extra_fields != ExtraFields::kIgnore;
  return layout;
}

RecordChecker::RecordChecker(const EntityDeclaration& entity)
    : entity_(entity),
      layout_(record_layout(entity)),
      fields_(entity.fields),
      extra_value_(FieldSpec{.name = std::string(kExtraColumn), .type = FieldType::kJson}) {}

Checked RecordChecker::check(const DecodedRecord& decoded) const {
  if (decoded.decode_error) return Rejection{*decoded.decode_error};
  EntityRecord record;
  const std::optional<Field>& key = decoded.field(kKeyField);
  if (!key || (key->kind == FieldKind::kUntyped && key->text.empty())) return reject(entity_.key, "missing");
  auto identifier = validate_identifier(entity_.key, *key);
  if (auto* rejection = std::get_if<Rejection>(&identifier)) return std::move(*rejection);
  record.key = std::move(std::get<std::string>(identifier));

  const std::optional<Field>& revision_field = decoded.field(kRevisionField);
  if (!revision_field || (revision_field->kind == FieldKind::kUntyped && revision_field->text.empty())) {
    return reject(entity_.revision, "missing");
  }
  const auto revision = validate_revision(entity_.revision, *revision_field);
  if (const auto* rejection = std::get_if<Rejection>(&revision)) return *rejection;
  record.revision = std::get<std::int64_t>(revision);

  // The declared fields: decoders deliver the whole layout; a shorter record has its last
  // fields absent.
  const std::size_t declared = fields_.fields().size();
  std::vector<std::optional<Field>> padded;
  std::span<const std::optional<Field>> values;
  if (decoded.fields.size() >= declared + 2) {
    values = std::span<const std::optional<Field>>(decoded.fields).subspan(2, declared);
  } else {
    padded.resize(declared);
    for (std::size_t i = 2; i < decoded.fields.size(); ++i) padded[i - 2] = decoded.fields[i];
    values = padded;
  }
  auto checked = fields_.check(values);
  if (auto* fault = std::get_if<FieldFault>(&checked)) {
    fault->rejection.field = fields_.fields()[fault->field].spec().name;
    return std::move(fault->rejection);
  }
  record.values = std::move(std::get<std::vector<CanonicalValue>>(checked));

  auto extra = check_undeclared(decoded);
  if (auto* rejection = std::get_if<Rejection>(&extra)) return std::move(*rejection);
  record.extra = std::move(std::get<std::optional<std::string>>(extra));
  return record;
}

std::variant<std::optional<std::string>, Rejection> RecordChecker::check_undeclared(
    const DecodedRecord& decoded) const {
  if (entity_.extra_fields == ExtraFields::kIgnore || decoded.undeclared.empty()) return std::nullopt;
  if (entity_.extra_fields == ExtraFields::kReject) {
    for (const auto& [name, value] : decoded.undeclared) {
      if (is_text_kind(value.kind) && value.text.empty()) continue;  // empty is no value
      bool replaced = false;
      const std::string shown = storable_text(name, replaced);
      return Rejection{shown + ": not a declared field (extra_fields: reject)", shown};
    }
    return std::nullopt;
  }
  // keep: each value as JSON (a delimited field's text is a string), then the object in
  // jsonb's canonical form, which orders the keys and keeps the last of duplicates.
  std::string object = "{";
  for (const auto& [name, value] : decoded.undeclared) {
    bool replaced = false;
    const std::string shown = storable_text(name, replaced);
    if (replaced || name.find('\0') != std::string::npos) {
      return Rejection{"extra: undeclared field name " + quoted_value(name) + " is not valid text", std::string(kExtraColumn)};
    }
    const std::optional<Field> as_json =
        value.kind == FieldKind::kUntyped ? Field{value.text, FieldKind::kString} : value;
    auto canonical = extra_value_.check(as_json);
    if (auto* rejection = std::get_if<Rejection>(&canonical)) {
      return Rejection{"extra." + shown + rejection->detail.substr(kExtraColumn.size()), std::string(kExtraColumn)};
    }
    const CanonicalValue& text = std::get<CanonicalValue>(canonical);
    if (!text) continue;  // a json null is absent
    if (object.size() > 1) object += ", ";
    object += json_quoted(name) + ": " + *text;
  }
  object += '}';
  if (object == "{}") return std::nullopt;
  auto canonical = canonical_json(object);
  if (auto* rejection = std::get_if<Rejection>(&canonical)) {
    return Rejection{"extra: " + rejection->detail, std::string(kExtraColumn)};
  }
  return std::optional<std::string>(std::move(std::get<std::string>(canonical)));
}

}  // namespace tidemark::pipeline
