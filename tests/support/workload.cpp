#include "tests/support/workload.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>

namespace tidemark::testing {

namespace {

constexpr std::int64_t kMaxRevision = 9223372036854775807;

// A field's value before it is spelt: a number for integer (the value), decimal (in units of
// the scale), timestamp (UTC microseconds), date (days since the epoch) and boolean (0 or 1);
// the text itself for text and json.
struct Value {
  std::int64_t number = 0;
  std::string text;
  friend bool operator==(const Value&, const Value&) = default;
};
// Field name -> value; no entry for absent.
using Payload = std::map<std::string, Value>;

// A record's fields as decoded text, by column name ("" is an empty field).
using Fields = std::map<std::string, std::string>;

struct Layout {
  std::vector<std::string> columns;
  std::string newline;
};

// Calendar date of a day count since 1970-01-01 (proleptic Gregorian).
void civil_from_days(std::int64_t days, std::int64_t& year, int& month, int& day) {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const std::int64_t day_of_era = days - era * 146097;
  const std::int64_t year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const std::int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const std::int64_t shifted_month = (5 * day_of_year + 2) / 153;
  day = static_cast<int>(day_of_year - (153 * shifted_month + 2) / 5 + 1);
  month = static_cast<int>(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
  year = year_of_era + era * 400 + (month <= 2 ? 1 : 0);
}

std::string two_digits(std::int64_t value) { return (value < 10 ? "0" : "") + std::to_string(value); }

class Generator {
 public:
  Generator(std::uint64_t seed, const oracle::EntitySpec& entity) : rng_(seed), entity_(entity) {}

  Workload generate(std::uint64_t seed, const WorkloadSize& size) {
    Workload workload;
    workload.seed = seed;
    workload.batch_size = size.min_batch + pick(size.max_batch - size.min_batch + 1);
    for (std::size_t f = 0; f < size.files; ++f) {
      const bool last = f + 1 == size.files;
      const std::size_t records = chance(0.1) && !last ? 0 : size.records / size.files + pick(size.records / size.files / 2 + 1);
      workload.files.push_back({"part-" + two_digits(static_cast<std::int64_t>(f + 1)) + ".csv", file(records, last)});
    }
    // Files the CSV source must skip: another extension, and a case it does not match.
    const std::string ignored = entity_.key + "," + entity_.revision + "," + entity_.fields[0].name + "\nignored,1,1\n";
    workload.files.push_back({"notes.txt", ignored});
    workload.files.push_back({"part-99.CSV", ignored});
    return workload;
  }

 private:
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  std::int64_t between(std::int64_t low, std::int64_t high) {
    return std::uniform_int_distribution<std::int64_t>(low, high)(rng_);
  }

  std::string file(std::size_t records, bool last) {
    Layout layout;
    layout.columns = {entity_.key, entity_.revision};
    for (const auto& field : entity_.fields) layout.columns.push_back(field.name);
    if (chance(0.15) && !entity_.fields.back().required) layout.columns.pop_back();
    // An undeclared column: ignored by the built-in entity (a declared one rejects it).
    if (entity_.legacy && chance(0.3)) layout.columns.push_back("note");
    std::shuffle(layout.columns.begin(), layout.columns.end(), rng_);
    layout.newline = chance(0.3) ? "\r\n" : "\n";
    std::vector<std::string> lines;
    std::string header;
    for (const auto& column : layout.columns) header += (header.empty() ? "" : ",") + column;
    lines.push_back(header);
    while (lines.size() < records + 1) add_records(layout, lines);
    std::string text = chance(0.2) ? "\xEF\xBB\xBF" : "";
    for (std::size_t i = 0; i < lines.size(); ++i) text += lines[i] + (i + 1 < lines.size() ? layout.newline : "");
    if (chance(0.2)) {
      // An unterminated quoted field runs to the end of the file: the file's last record.
      text += layout.newline + next_key() + ",1,\"12.50" + layout.newline + "never closed";
    } else if (!(last ? chance(0.4) : chance(0.15))) {
      text += layout.newline;
    }
    return text;
  }

  std::string next_key() {
    const int n = next_key_++;
    switch (pick(20)) {
      case 0: return "tx," + std::to_string(n);          // needs quoting
      case 1: return "tx \"q\" " + std::to_string(n);    // quotes inside quotes
      case 2: return "tx-\xC3\xA9-" + std::to_string(n);  // two-byte UTF-8
      default: return "tx-" + std::to_string(n);
    }
  }

  static std::int64_t power_of_ten(int exponent) {
    std::int64_t value = 1;
    for (int i = 0; i < exponent; ++i) value *= 10;
    return value;
  }

  Value fresh_value(const oracle::FieldSpec& field) {
    Value value;
    if (field.type == "text") {
      static const char* const kTexts[] = {"\xC3\xA9\xF0\x9F\x98\x80z", "say \"hi\"", "v,1"};
      value.text = chance(0.1) ? kTexts[pick(3)] : "v-" + std::to_string(1 + pick(4));
    } else if (field.type == "integer") {
      value.number = chance(0.02) ? (chance(0.5) ? kMaxRevision : -kMaxRevision - 1) : between(-1000, 1000);
    } else if (field.type == "decimal") {
      // Up to 17 digits fit an int64: the largest value of the type when it is that small.
      const std::int64_t largest = field.precision <= 17 ? power_of_ten(field.precision) - 1 : kMaxRevision;
      value.number = chance(0.02) ? (chance(0.5) ? largest : -largest)
                                  : std::clamp<std::int64_t>(between(-500000, 5000000), -largest, largest);
    } else if (field.type == "timestamp") {
      value.number = (1704067200 + between(0, 365 * 86400)) * 1000000 + (chance(0.3) ? between(0, 999999) : 0);
    } else if (field.type == "date") {
      static constexpr std::int64_t kEdges[] = {-719162, 2932896, 19782};  // 0001-01-01, 9999-12-31, 2024-02-29
      value.number = chance(0.05) ? kEdges[pick(3)] : between(18000, 21000);
    } else if (field.type == "boolean") {
      value.number = chance(0.5) ? 1 : 0;
    } else {
      const auto& spellings = oracle::json_spellings();
      value.text = spellings[pick(spellings.size())];
    }
    return value;
  }

  Payload fresh_payload() {
    Payload payload;
    for (const auto& field : entity_.fields) {
      if (field.required || chance(0.75)) payload[field.name] = fresh_value(field);
    }
    return payload;
  }

  // A decimal of `units` at `scale`, spelt one of the ways that mean it: a '+', trailing
  // zeros of the fraction dropped.
  std::string decimal_text(std::int64_t units, int scale) {
    const std::uint64_t magnitude = units < 0 ? 0 - static_cast<std::uint64_t>(units) : static_cast<std::uint64_t>(units);
    const std::string sign = units < 0 ? "-" : (chance(0.1) ? "+" : "");
    const auto divisor = static_cast<std::uint64_t>(power_of_ten(scale));
    std::string fraction = std::to_string(magnitude % divisor);
    fraction.insert(0, static_cast<std::size_t>(scale) - fraction.size(), '0');
    if (chance(0.6)) {
      const std::size_t last = fraction.find_last_not_of('0');
      const std::size_t kept = last == std::string::npos ? 0 : last + 1;
      fraction.erase(kept + pick(fraction.size() - kept + 1));
    }
    return sign + std::to_string(magnitude / divisor) + (fraction.empty() ? "" : "." + fraction);
  }

  static std::string date_text(std::int64_t days) {
    std::int64_t year = 0;
    int month = 0, day = 0;
    civil_from_days(days, year, month, day);
    std::string text = std::to_string(year);
    text.insert(0, 4 - text.size(), '0');
    return text + "-" + two_digits(month) + "-" + two_digits(day);
  }

  std::string spell(const oracle::FieldSpec& field, const Value& value) {
    if (field.type == "integer") {
      if (value.number == 0 && chance(0.3)) return "-0";
      return (value.number >= 0 && chance(0.1) ? "00" : "") + std::to_string(value.number);
    }
    if (field.type == "decimal") return decimal_text(value.number, field.scale);
    if (field.type == "timestamp") return time_text(value.number);
    if (field.type == "date") return date_text(value.number);
    if (field.type == "boolean") return value.number ? "true" : "false";
    return value.text;
  }

  std::string time_text(std::int64_t utc_us) {
    static constexpr int kOffsetMinutes[] = {0, 0, 120, -330, 545};
    const std::size_t choice = pick(5);
    const int offset = kOffsetMinutes[choice];
    const std::int64_t local_seconds = utc_us / 1000000 + offset * 60;
    std::int64_t year = 0;
    int month = 0, day = 0;
    civil_from_days(local_seconds / 86400, year, month, day);
    const std::int64_t second_of_day = local_seconds % 86400;
    std::string text = std::to_string(year) + "-" + two_digits(month) + "-" + two_digits(day) + "T" +
                       two_digits(second_of_day / 3600) + ":" + two_digits(second_of_day / 60 % 60) + ":" +
                       two_digits(second_of_day % 60);
    if (const std::int64_t micros = utc_us % 1000000; micros != 0) {
      std::string fraction = std::to_string(micros);
      fraction.insert(0, 6 - fraction.size(), '0');
      if (chance(0.5)) fraction.erase(fraction.find_last_not_of('0') + 1);
      text += "." + fraction;
    }
    if (choice == 0) return text + "Z";
    const int magnitude = offset < 0 ? -offset : offset;
    return text + (offset < 0 ? "-" : "+") + two_digits(magnitude / 60) + ":" + two_digits(magnitude % 60);
  }

  Fields render(const std::string& key, std::int64_t revision, const Payload& payload) {
    Fields fields;
    fields[entity_.key] = key;
    fields[entity_.revision] = std::to_string(revision);
    for (const auto& field : entity_.fields) {
      const auto found = payload.find(field.name);
      fields[field.name] = found != payload.end() ? spell(field, found->second) : "";
    }
    // The undeclared column of the built-in entity's files (a declared `note` keeps its value).
    fields.try_emplace("note", chance(0.3) ? "hello, \"world\"" : "n" + std::to_string(pick(100)));
    return fields;
  }

  // The record's fields as they appear on the line, each already CSV-encoded.
  static std::vector<std::string> encode(const Layout& layout, const Fields& fields) {
    std::vector<std::string> encoded;
    for (const auto& column : layout.columns) encoded.push_back(oracle::csv_field(fields.at(column)));
    return encoded;
  }
  static std::string join(const std::vector<std::string>& encoded) {
    std::string line;
    for (std::size_t i = 0; i < encoded.size(); ++i) line += (i ? "," : "") + encoded[i];
    return line;
  }
  std::string valid_line(const Layout& layout, const std::string& key, std::int64_t revision, const Payload& payload) {
    Fields fields = render(key, revision, payload);
    const std::string line = join(encode(layout, fields));
    recent_.push_back(fields);
    if (recent_.size() > 8) recent_.erase(recent_.begin());
    return line;
  }

  struct Key {
    std::string id;
    std::int64_t max_revision = 0;
    std::map<std::int64_t, Payload> payloads;  // the first payload written for each revision
  };

  Key& new_key(std::int64_t revision) {
    keys_.push_back({next_key(), revision, {}});
    return keys_.back();
  }
  Key& existing_key() { return keys_[pick(keys_.size())]; }

  // Writes `revision` of `key` with its remembered payload (or a fresh one it remembers).
  std::string version(const Layout& layout, Key& key, std::int64_t revision) {
    auto [found, fresh] = key.payloads.try_emplace(revision);
    if (fresh) found->second = fresh_payload();
    key.max_revision = std::max(key.max_revision, revision);
    return valid_line(layout, key.id, revision, found->second);
  }

  void add_records(const Layout& layout, std::vector<std::string>& lines) {
    const std::size_t roll = pick(100);
    const bool have_keys = !keys_.empty();
    if (roll < 22 || !have_keys) {
      Key& key = new_key(between(0, 3));
      lines.push_back(version(layout, key, key.max_revision));
    } else if (roll < 40) {  // a correction: a newer revision
      Key& key = existing_key();
      if (key.max_revision > kMaxRevision - 10) return;
      lines.push_back(version(layout, key, key.max_revision + between(1, 3)));
    } else if (roll < 48 && !recent_.empty()) {  // the same record again, byte for byte
      lines.push_back(join(encode(layout, recent_[pick(recent_.size())])));
    } else if (roll < 53 && !recent_.empty()) {  // the same record written differently
      Fields fields = recent_[pick(recent_.size())];
      for (const Key& key : keys_) {
        if (key.id != fields[entity_.key]) continue;
        const auto revision = std::stoll(fields[entity_.revision]);
        if (const auto found = key.payloads.find(revision); found != key.payloads.end()) {
          lines.push_back(valid_line(layout, key.id, revision, found->second));
        }
      }
    } else if (roll < 61) {  // an older revision than the newest
      Key& key = existing_key();
      if (key.max_revision == 0 || key.max_revision == kMaxRevision) return;
      lines.push_back(version(layout, key, between(0, key.max_revision - 1)));
    } else if (roll < 67) {  // a same-revision conflict, usually against an earlier batch
      Key& key = existing_key();
      const auto& [revision, payload] = *std::next(key.payloads.begin(), static_cast<std::ptrdiff_t>(pick(key.payloads.size())));
      Payload other = payload;
      const oracle::FieldSpec& decimal = first_decimal();
      Value& units = other[decimal.name];
      units.number += 1 + static_cast<std::int64_t>(pick(50));
      if (decimal.precision <= 17 && units.number >= power_of_ten(decimal.precision)) units.number -= 100;
      lines.push_back(valid_line(layout, key.id, revision, other));
    } else if (roll < 72) {  // several revisions of one key in a row
      Key& key = chance(0.5) ? existing_key() : new_key(between(0, 2));
      if (key.max_revision > kMaxRevision - 10) return;
      const std::int64_t first = key.max_revision + (key.payloads.empty() ? 0 : 1);
      const auto count = between(2, 3);
      for (std::int64_t r = 0; r < count; ++r) lines.push_back(version(layout, key, first + r));
    } else if (roll < 75) {  // a same-revision conflict next to its twin
      Key& key = new_key(between(0, 5));
      lines.push_back(version(layout, key, key.max_revision));
      // The twin differs in its last optional field: there and absent, or absent and there.
      Payload other = key.payloads[key.max_revision];
      const oracle::FieldSpec& last = last_optional();
      if (other.erase(last.name) == 0) other[last.name] = fresh_value(last);
      lines.push_back(valid_line(layout, key.id, key.max_revision, other));
    } else if (roll < 89) {
      lines.push_back(invalid_line(layout));
    } else if (roll < 95) {
      lines.push_back(undecodable_line(layout));
    } else if (roll < 97) {  // valid edges: the largest revision, the longest key
      Key& key = new_key(chance(0.5) ? kMaxRevision : 1);
      if (chance(0.5)) key.id = std::string(120, 'k') + "-" + std::to_string(next_key_++);
      lines.push_back(version(layout, key, key.max_revision));
    } else {
      lines.push_back("");  // an empty line carries no record
    }
  }

  bool has(const Layout& layout, const std::string& column) const {
    return std::find(layout.columns.begin(), layout.columns.end(), column) != layout.columns.end();
  }

  const oracle::FieldSpec& first_decimal() const {
    for (const auto& field : entity_.fields) {
      if (field.type == "decimal" && field.required) return field;
    }
    throw std::logic_error("the workload needs a required decimal field");
  }
  const oracle::FieldSpec& last_optional() const {
    for (auto field = entity_.fields.rbegin(); field != entity_.fields.rend(); ++field) {
      if (!field->required) return *field;
    }
    throw std::logic_error("the workload needs an optional field");
  }

  // Values that break the rule of a field of `field`'s type, one at a time.
  static std::vector<std::string> breaks(const oracle::FieldSpec& field) {
    std::vector<std::string> values;
    if (field.required) values.push_back("");
    if (field.type == "text") {
      values.insert(values.end(), {"acc\n1", "tab\tbed", "bad-\xFF-utf8", std::string(field.max_length + 1, 'a')});
    } else if (field.type == "integer") {
      values.insert(values.end(), {"+1", "1.0", "1e3", " 1", "9223372036854775808", "-9223372036854775809"});
    } else if (field.type == "decimal") {
      const auto whole = static_cast<std::size_t>(field.precision - field.scale);
      values.insert(values.end(), {"1." + std::string(static_cast<std::size_t>(field.scale) + 1, '5'),
                                   std::string(whole + 1, '9'), "1e3", "NaN", "Infinity", "12,5", ".5", "5."});
    } else if (field.type == "timestamp") {
      values.insert(values.end(), {"2024-05-01T10:00:00", "2024-02-30T10:00:00Z", "yesterday", "2024-05-01T25:00:00Z",
                                   "2024-05-01 08:00:00Z", "2024-05-01T08:00:00.1234567Z", "0001-01-01T00:30:00+01:00"});
    } else if (field.type == "date") {
      values.insert(values.end(), {"2023-02-29", "1900-02-29", "2024-04-31", "0000-12-31", "2024-5-01", "2024-05-01T00:00:00Z"});
    } else if (field.type == "boolean") {
      values.insert(values.end(), {"TRUE", "t", "1", "yes"});
    } else {
      values.insert(values.end(), {"abc", "[1,]", "01", "NaN"});
    }
    return values;
  }

  // A record whose one column breaks its rule: the key, the revision or a declared field.
  std::string invalid_line(const Layout& layout) {
    Fields fields = render(keys_.empty() || chance(0.5) ? next_key() : existing_key().id, between(0, 9), fresh_payload());
    static const std::vector<std::string> kKeyBreaks = {"", std::string(129, 'x'), "tx\t1", "tx-\xFF-1"};
    static const std::vector<std::string> kRevisionBreaks = {"-1", "1.5", "abc", "", "9223372036854775808", "+3"};
    const std::size_t column = pick(entity_.fields.size() + 2);
    if (column == 0) {
      fields[entity_.key] = kKeyBreaks[pick(kKeyBreaks.size())];
    } else if (column == 1) {
      fields[entity_.revision] = kRevisionBreaks[pick(kRevisionBreaks.size())];
    } else {
      const oracle::FieldSpec& field = entity_.fields[column - 2];
      const oracle::FieldSpec& target = has(layout, field.name) ? field : first_decimal();
      const std::vector<std::string> values = breaks(target);
      fields[target.name] = values[pick(values.size())];
    }
    return join(encode(layout, fields));
  }

  std::string undecodable_line(const Layout& layout) {
    const Fields fields = render(next_key(), 1, fresh_payload());
    std::vector<std::string> encoded = encode(layout, fields);
    const auto decimal = static_cast<std::size_t>(
        std::find(layout.columns.begin(), layout.columns.end(), first_decimal().name) - layout.columns.begin());
    switch (pick(4)) {
      case 0: encoded.pop_back(); break;               // too few columns
      case 1: encoded.push_back("extra"); break;       // too many columns
      case 2: encoded[decimal] = "12\"5"; break;       // a quote inside an unquoted field
      default: encoded[decimal] = "\"12.50\"x"; break;  // text after a closing quote
    }
    return join(encoded);
  }

  std::mt19937_64 rng_;
  const oracle::EntitySpec& entity_;
  std::vector<Key> keys_;
  std::vector<Fields> recent_;  // valid records written lately, for duplicates
  int next_key_ = 0;
};

}  // namespace

Workload generate_workload(std::uint64_t seed, const WorkloadSize& size, const oracle::EntitySpec& entity) {
  return Generator(seed, entity).generate(seed, size);
}

void write_workload(const Workload& workload, const std::filesystem::path& folder) {
  std::filesystem::create_directories(folder);
  for (const auto& file : workload.files) {
    std::ofstream out(folder / file.name, std::ios::binary | std::ios::trunc);
    out << file.content;
    if (!out) throw std::runtime_error("cannot write " + (folder / file.name).string());
  }
}

}  // namespace tidemark::testing
