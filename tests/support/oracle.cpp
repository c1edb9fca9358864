#include "tests/support/oracle.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include <pqxx/pqxx>

namespace tidemark::testing::oracle {

namespace {

// ---- CSV, RFC 4180 ---------------------------------------------------------------------

struct CsvRow {
  std::string raw;
  std::uint64_t line = 0;
  std::uint64_t offset = 0;
  std::uint64_t end_offset = 0;
  std::vector<std::string> fields;
  bool malformed = false;
};

// Splits a file into rows (the header included). A UTF-8 BOM and empty lines carry no row;
// a quote inside an unquoted field is malformed but opens nothing, so it cannot swallow the
// following lines; an unterminated quoted field runs to the end of the file.
std::vector<CsvRow> read_csv(std::string_view text) {
  std::vector<CsvRow> rows;
  std::size_t at = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  std::uint64_t line = 1;
  while (at < text.size()) {
    if (text[at] == '\n') {
      ++at;
      ++line;
      continue;
    }
    if (text.substr(at, 2) == "\r\n") {
      at += 2;
      ++line;
      continue;
    }
    CsvRow row;
    row.line = line;
    row.offset = at;
    std::string field;
    bool ended = false;
    std::size_t content_end = text.size();
    while (!ended) {
      // One field.
      field.clear();
      const bool quoted = at < text.size() && text[at] == '"';
      if (quoted) {
        ++at;
        bool closed = false;
        while (at < text.size()) {
          const char c = text[at];
          if (c == '"') {
            if (at + 1 < text.size() && text[at + 1] == '"') {
              field += '"';
              at += 2;
              continue;
            }
            ++at;
            closed = true;
            break;
          }
          if (c == '\n') ++line;
          field += c;
          ++at;
        }
        if (!closed) {
          row.malformed = true;
          row.fields.push_back(field);
          content_end = text.size();
          ended = true;
          break;
        }
      }
      // Unquoted text, or what follows a closing quote (malformed unless a separator).
      while (true) {
        if (at >= text.size()) {
          content_end = text.size();
          ended = true;
          break;
        }
        const char c = text[at];
        if (c == ',') {
          ++at;
          break;
        }
        if (c == '\n') {
          content_end = at > row.offset && text[at - 1] == '\r' ? at - 1 : at;
          ++at;
          ++line;
          ended = true;
          break;
        }
        if (c == '\r' && at + 1 < text.size() && text[at + 1] == '\n') {
          ++at;  // the LF ends the row on the next turn
          continue;
        }
        if (quoted || c == '"') row.malformed = true;
        field += c;
        ++at;
      }
      row.fields.push_back(field);
    }
    row.end_offset = at;
    row.raw = std::string(text.substr(row.offset, content_end - row.offset));
    rows.push_back(std::move(row));
  }
  return rows;
}

// ---- The field rules of docs/cli.md "Input records" ----------------------------------

// The code points of valid UTF-8 text without a control character; nullopt for other text.
std::optional<std::size_t> code_points(std::string_view text) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::uint32_t point = 0;
    std::size_t length = 0;
    if (lead < 0x80) {
      point = lead;
      length = 1;
    } else if ((lead & 0xE0) == 0xC0) {
      point = lead & 0x1F;
      length = 2;
    } else if ((lead & 0xF0) == 0xE0) {
      point = lead & 0x0F;
      length = 3;
    } else if ((lead & 0xF8) == 0xF0) {
      point = lead & 0x07;
      length = 4;
    } else {
      return std::nullopt;
    }
    if (i + length > text.size()) return std::nullopt;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return std::nullopt;
      point = (point << 6) | (next & 0x3F);
    }
    static constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < kMinimum[length] || point > 0x10FFFF || (point >= 0xD800 && point <= 0xDFFF)) return std::nullopt;
    if (point < 0x20 || (point >= 0x7F && point <= 0x9F)) return std::nullopt;
    i += length;
    ++count;
  }
  return count;
}

// A key: 1..128 code points of text.
bool valid_identifier(std::string_view text) {
  const auto count = code_points(text);
  return count && *count >= 1 && *count <= 128;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Valid UTF-8 of at most `max_length` code points, none of them a control character.
bool valid_text(std::string_view text, std::size_t max_length) {
  const auto count = code_points(text);
  return count && *count <= max_length;
}

// An optional '-' (when `signed_allowed`), then digits, within the range of a bigint.
std::optional<std::string> parse_integer(std::string_view text, bool signed_allowed) {
  bool negative = false;
  if (signed_allowed && !text.empty() && text.front() == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  if (!all_digits(text)) return std::nullopt;
  while (text.size() > 1 && text.front() == '0') text.remove_prefix(1);
  const std::string_view limit = negative ? "9223372036854775808" : "9223372036854775807";
  if (text.size() > limit.size() || (text.size() == limit.size() && text > limit)) return std::nullopt;
  return (negative && text != "0" ? "-" : "") + std::string(text);
}

std::optional<std::int64_t> parse_revision(std::string_view text) {
  const auto value = parse_integer(text, false);
  if (!value) return std::nullopt;
  return std::stoll(*value);
}

// numeric(precision, scale): an optional sign, digits, optionally a point and 1 or more
// digits; at most precision - scale digits before the point (leading zeros do not count) and
// at most scale after it. The canonical form is numeric's text: `scale` fraction digits.
std::optional<std::string> parse_decimal(std::string_view text, int precision, int scale) {
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  const std::size_t point = text.find('.');
  std::string_view whole = text.substr(0, point);
  const std::string_view fraction = point == std::string_view::npos ? std::string_view{} : text.substr(point + 1);
  if (!all_digits(whole)) return std::nullopt;
  if (point != std::string_view::npos && !all_digits(fraction)) return std::nullopt;
  while (whole.size() > 1 && whole.front() == '0') whole.remove_prefix(1);
  const bool zero_whole = whole == "0";
  if (!zero_whole && whole.size() > static_cast<std::size_t>(precision - scale)) return std::nullopt;
  if (fraction.size() > static_cast<std::size_t>(scale)) return std::nullopt;
  std::string digits = std::string(zero_whole ? "0" : whole);
  std::string padded(fraction);
  padded.resize(static_cast<std::size_t>(scale), '0');
  const bool nonzero = !zero_whole || padded.find_first_not_of('0') != std::string::npos;
  return (negative && nonzero ? "-" : "") + digits + (scale > 0 ? "." + padded : "");
}

// Days from 1970-01-01 to a proleptic Gregorian date (year shifted to start in March).
std::int64_t days_since_epoch(std::int64_t year, int month, int day) {
  year -= month <= 2 ? 1 : 0;
  const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
  const std::int64_t year_of_era = year - era * 400;
  const std::int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const std::int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

std::optional<int> digits_at(std::string_view text, std::size_t at, std::size_t width) {
  if (at + width > text.size() || !all_digits(text.substr(at, width))) return std::nullopt;
  int value = 0;
  for (std::size_t i = 0; i < width; ++i) value = value * 10 + (text[at + i] - '0');
  return value;
}

// YYYY-MM-DD of a real date of the years 0001-9999; its days since the epoch.
std::optional<std::int64_t> parse_date(std::string_view text) {
  const auto year = digits_at(text, 0, 4), month = digits_at(text, 5, 2), day = digits_at(text, 8, 2);
  if (!year || !month || !day || text.size() < 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  const bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (*year < 1 || *month < 1 || *month > 12 || *day < 1 ||
      *day > kDays[*month - 1] + (*month == 2 && leap ? 1 : 0)) {
    return std::nullopt;
  }
  return days_since_epoch(*year, *month, *day);
}

// RFC 3339 date-time with an offset: YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|±HH:MM).
std::optional<std::int64_t> parse_rfc3339(std::string_view text) {
  const auto days = parse_date(text.substr(0, 10));
  const auto hour = digits_at(text, 11, 2), minute = digits_at(text, 14, 2), second = digits_at(text, 17, 2);
  if (!days || !hour || !minute || !second || text.size() < 20 || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':' || *hour > 23 || *minute > 59 || *second > 59) {
    return std::nullopt;
  }
  std::size_t at = 19;
  std::int64_t micros = 0;
  if (text[at] == '.') {
    const std::size_t start = ++at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    const std::size_t digits = at - start;
    if (digits < 1 || digits > 6) return std::nullopt;
    for (std::size_t i = 0; i < 6; ++i) micros = micros * 10 + (i < digits ? text[start + i] - '0' : 0);
  }
  std::int64_t offset_seconds = 0;
  const std::string_view zone = text.substr(at);
  if (zone != "Z") {
    if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || zone[3] != ':') return std::nullopt;
    const auto offset_hours = digits_at(text, at + 1, 2), offset_minutes = digits_at(text, at + 4, 2);
    if (!offset_hours || !offset_minutes || *offset_hours > 23 || *offset_minutes > 59) return std::nullopt;
    offset_seconds = (*offset_hours * 3600 + *offset_minutes * 60) * (zone[0] == '-' ? -1 : 1);
  }
  const std::int64_t seconds = *days * 86400 + *hour * 3600 + *minute * 60 + *second - offset_seconds;
  // 0001-01-01T00:00:00Z ... 9999-12-31T23:59:59.999999Z once in UTC.
  if (seconds < -62135596800 || seconds > 253402300799) return std::nullopt;
  return seconds * 1000000 + micros;
}

// Spelling -> jsonb::text, docs/entities.md "canonical forms".
const std::map<std::string, std::string>& json_forms() {
  static const std::map<std::string, std::string> kForms = {
      {R"({"b":1,"a":[1e2,"x"]})", R"({"a": [100, "x"], "b": 1})"},
      {R"({"a": [100, "x"], "b": 1})", R"({"a": [100, "x"], "b": 1})"},
      {R"({"b":1,"b":2})", R"({"b": 2})"},
      {R"({"b": 2})", R"({"b": 2})"},
      {R"([1,null,"\u00e9\/"])", R"([1, null, "é/"])"},
      {R"({"tags":["x",{"n":1.50}],"ok":true})", R"({"ok": true, "tags": ["x", {"n": 1.50}]})"},
      {"1.0e-2", "0.010"},
      {"-0", "0"},
      {R"("plain")", R"("plain")"},
  };
  return kForms;
}

// The canonical form of `text` in `field`, or nullopt when the value breaks its type's rule.
std::optional<std::string> canonical(const FieldSpec& field, const std::string& text) {
  if (field.type == "text") return valid_text(text, field.max_length) ? std::optional(text) : std::nullopt;
  if (field.type == "integer") return parse_integer(text, true);
  if (field.type == "decimal") return parse_decimal(text, field.precision, field.scale);
  if (field.type == "timestamp") {
    const auto micros = parse_rfc3339(text);
    return micros ? std::optional(std::to_string(*micros)) : std::nullopt;
  }
  if (field.type == "date") return parse_date(text) && text.size() == 10 ? std::optional(text) : std::nullopt;
  if (field.type == "boolean") return text == "true" || text == "false" ? std::optional(text) : std::nullopt;
  const auto found = json_forms().find(text);
  return found == json_forms().end() ? std::nullopt : std::optional(found->second);
}

struct Valid {
  std::string key;
  std::int64_t revision = 0;
  std::string partition;  // the partition field's canonical form, or the key when absent
  StateRow payload;       // revision filled in
};

struct InputRecord {
  std::string raw;
  std::string position;
  std::optional<Valid> valid;  // nullopt: invalid
  std::string field;           // the field at fault of an invalid record
};

// Header name -> column. Checks the key, the revision, then each field in declaration order;
// an invalid record names the first field at fault, an undecodable one none.
InputRecord validate(const EntitySpec& entity, const CsvRow& row, const std::map<std::string, std::size_t>& columns,
                     std::size_t column_count, std::string position) {
  InputRecord record{row.raw, std::move(position), std::nullopt, ""};
  if (row.malformed || row.fields.size() != column_count) return record;
  auto value = [&](const std::string& name) -> std::optional<std::string> {
    const auto found = columns.find(name);
    if (found == columns.end() || row.fields[found->second].empty()) return std::nullopt;
    return row.fields[found->second];
  };
  const auto key = value(entity.key);
  if (!key || !valid_identifier(*key)) {
    record.field = entity.key;
    return record;
  }
  const auto revision_text = value(entity.revision);
  const auto revision = revision_text ? parse_revision(*revision_text) : std::nullopt;
  if (!revision) {
    record.field = entity.revision;
    return record;
  }
  Valid valid{*key, *revision, *key, StateRow{*revision, {}}};
  for (const FieldSpec& field : entity.fields) {
    const auto text = value(field.name);
    std::optional<std::string> form;
    if (text) form = canonical(field, *text);
    if ((text && !form) || (!text && field.required)) {
      record.field = field.name;
      return record;
    }
    if (field.name == entity.partition_by && form) valid.partition = *form;
    valid.payload.fields.push_back(form);
  }
  record.valid = std::move(valid);
  return record;
}

enum Index : std::size_t { kInserted, kUpdated, kUnchanged, kStale, kSuperseded, kDuplicate, kInvalid, kConflict };

}  // namespace

const EntitySpec& transaction_entity() {
  static const EntitySpec kTransaction{"transaction",
                                       "transaction_state",
                                       "transaction_id",
                                       "source_revision",
                                       "account_id",
                                       {{"amount", "decimal", 12, 2, true},
                                        {"account_id", "text", 0, 0, false, 128},
                                        {"occurred_at", "timestamp"}},
                                       true};
  return kTransaction;
}

const EntitySpec& every_type_entity() {
  static const EntitySpec kOrders{"orders",
                                  "orders",
                                  "order_id",
                                  "version",
                                  "customer_id",
                                  {{"customer_id", "text", 0, 0, true, 16},
                                   {"amount", "decimal", 10, 3, true},
                                   {"quantity", "integer"},
                                   {"placed_at", "timestamp"},
                                   {"ship_date", "date"},
                                   {"paid", "boolean"},
                                   {"meta", "json"},
                                   {"note", "text"}},
                                  false};
  return kOrders;
}

std::string declaration_yaml(const EntitySpec& entity) {
  if (entity.legacy) return "";
  std::string yaml = "entities:\n  " + entity.name + ":\n    table: " + entity.table + "\n    key: " + entity.key +
                     "\n    revision: " + entity.revision + "\n    partition_by: " + entity.partition_by +
                     "\n    extra_fields: reject\n    fields:\n";
  for (const FieldSpec& field : entity.fields) {
    yaml += "      " + field.name + ": {type: " + field.type;
    if (field.type == "decimal") {
      yaml += ", precision: " + std::to_string(field.precision) + ", scale: " + std::to_string(field.scale);
    }
    if (field.type == "text" && field.max_length != 1024) yaml += ", max_length: " + std::to_string(field.max_length);
    if (field.required) yaml += ", required: true";
    yaml += "}\n";
  }
  return yaml;
}

const std::vector<std::string>& json_spellings() {
  static const std::vector<std::string> kSpellings = [] {
    std::vector<std::string> spellings;
    for (const auto& [spelling, form] : json_forms()) spellings.push_back(spelling);
    return spellings;
  }();
  return kSpellings;
}

std::string csv_field(std::string_view value) {
  if (value.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(value);
  std::string quoted = "\"";
  for (char c : value) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

namespace {

// The files a folder source reads, in its order: the .csv ones, by name.
std::vector<SourceFile> csv_files_in_order(std::vector<SourceFile> files) {
  std::erase_if(files, [](const SourceFile& file) {
    return file.name.size() < 4 || file.name.compare(file.name.size() - 4, 4, ".csv") != 0;
  });
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return files;
}

}  // namespace

std::vector<std::map<std::string, std::string>> well_formed_records(std::vector<SourceFile> files) {
  std::vector<std::map<std::string, std::string>> records;
  for (const SourceFile& file : csv_files_in_order(std::move(files))) {
    const std::vector<CsvRow> rows = read_csv(file.content);
    if (rows.empty()) continue;
    for (std::size_t i = 1; i < rows.size(); ++i) {
      if (rows[i].malformed || rows[i].fields.size() != rows[0].fields.size()) continue;
      std::map<std::string, std::string> record;
      for (std::size_t c = 0; c < rows[0].fields.size(); ++c) record.emplace(rows[0].fields[c], rows[i].fields[c]);
      records.push_back(std::move(record));
    }
  }
  return records;
}

Outcome expect(const EntitySpec& entity, std::vector<SourceFile> files, std::size_t batch_size,
               const std::vector<std::string>& destinations) {
  files = csv_files_in_order(std::move(files));

  Outcome outcome;
  std::vector<InputRecord> input;
  for (const SourceFile& file : files) {
    const std::vector<CsvRow> rows = read_csv(file.content);
    if (rows.empty()) continue;
    std::map<std::string, std::size_t> columns;
    for (std::size_t i = 0; i < rows[0].fields.size(); ++i) columns.emplace(rows[0].fields[i], i);
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const CsvRow& row = rows[i];
      input.push_back(validate(entity, row, columns, rows[0].fields.size(),
                               file.name + ":" + std::to_string(row.line) + " (byte " + std::to_string(row.offset) + ")"));
      outcome.checkpoint = file.name + ":" + std::to_string(row.end_offset);
    }
  }

  std::map<std::string, StateRow> state;
  std::set<std::string> outbox;
  std::map<std::string, std::uint64_t> sequences;
  for (std::size_t begin = 0; begin < input.size(); begin += batch_size) {
    const std::size_t end = std::min(input.size(), begin + batch_size);
    std::vector<std::optional<Index>> verdict(end - begin);
    // Conflicts first: a same key and revision with another payload, in the batch or stored.
    for (std::size_t i = begin; i < end; ++i) {
      const auto& record = input[i].valid;
      if (!record) {
        verdict[i - begin] = kInvalid;
        continue;
      }
      const auto stored = state.find(record->key);
      bool conflict = stored != state.end() && stored->second.revision == record->revision &&
                      stored->second.fields != record->payload.fields;
      for (std::size_t j = begin; j < end && !conflict; ++j) {
        const auto& other = input[j].valid;
        conflict = other && other->key == record->key && other->revision == record->revision &&
                   other->payload.fields != record->payload.fields;
      }
      if (conflict) verdict[i - begin] = kConflict;
    }
    // Then duplicates of an earlier record, then revisions that a higher one supersedes: a
    // valid record not in conflict (a rejected one never hides a valid one).
    const std::vector<std::optional<Index>> rejected = verdict;
    for (std::size_t i = begin; i < end; ++i) {
      if (verdict[i - begin]) continue;
      const Valid& record = *input[i].valid;
      for (std::size_t j = begin; j < i && !verdict[i - begin]; ++j) {
        const auto& other = input[j].valid;
        if (other && other->key == record.key && other->revision == record.revision) verdict[i - begin] = kDuplicate;
      }
      for (std::size_t j = begin; j < end && !verdict[i - begin]; ++j) {
        const auto& other = input[j].valid;
        if (other && !rejected[j - begin] && other->key == record.key && other->revision > record.revision) {
          verdict[i - begin] = kSuperseded;
        }
      }
    }
    // What is left is at most one version per key, compared with the row stored before the batch.
    std::map<std::string, StateRow> changes;
    for (std::size_t i = begin; i < end; ++i) {
      if (!verdict[i - begin]) {
        const Valid& record = *input[i].valid;
        const auto stored = state.find(record.key);
        if (stored == state.end()) {
          verdict[i - begin] = kInserted;
        } else if (stored->second.revision < record.revision) {
          verdict[i - begin] = kUpdated;
        } else {
          verdict[i - begin] = stored->second.revision == record.revision ? kUnchanged : kStale;
        }
        if (verdict[i - begin] == kInserted || verdict[i - begin] == kUpdated) {
          changes[record.key] = record.payload;
          for (const auto& destination : destinations) {
            outbox.insert(destination + ":" + (entity.legacy ? "" : entity.name + ":") + record.key + ":" +
                          std::to_string(record.revision));
            ++sequences[destination + " " + record.partition];
          }
        }
      }
      ++outcome.totals[*verdict[i - begin]];
      if (*verdict[i - begin] == kInvalid || *verdict[i - begin] == kConflict) {
        const bool invalid = *verdict[i - begin] == kInvalid;
        outcome.quarantine.push_back({invalid ? "invalid" : "conflict", input[i].position, input[i].raw, entity.name,
                                      invalid ? input[i].field : ""});
      }
    }
    for (auto& [key, row] : changes) state[key] = row;
  }
  outcome.state.assign(state.begin(), state.end());
  outcome.outbox_keys.assign(outbox.begin(), outbox.end());
  for (const auto& [stream, count] : sequences) outcome.sequences[stream] = "1.." + std::to_string(count);
  std::sort(outcome.quarantine.begin(), outcome.quarantine.end());
  return outcome;
}

Outcome observe(const std::string& url, const std::string& pipeline, const EntitySpec& entity) {
  pqxx::connection connection(url);
  pqxx::read_transaction txn(connection);
  Outcome outcome;
  // Each column as its canonical text; a timestamp as UTC microseconds.
  auto quoted = [&](const std::string& name) { return txn.quote_name(name); };
  std::string columns = quoted(entity.key) + ", " + quoted(entity.revision);
  for (const FieldSpec& field : entity.fields) {
    columns += ", " + (field.type == "timestamp"
                           ? "(extract(epoch FROM " + quoted(field.name) + ") * 1000000)::bigint::text"
                           : quoted(field.name) + "::text");
  }
  for (const auto& row : txn.exec_params("SELECT " + columns + " FROM " + quoted(entity.table) + " WHERE " +
                                             (entity.legacy ? "pipeline" : "tidemark_pipeline") + " = $1 ORDER BY " + quoted(entity.key) +
                                             " COLLATE \"C\"",
                                         pipeline)) {
    StateRow state{row[1].as<std::int64_t>(), {}};
    for (int i = 2; i < static_cast<int>(row.size()); ++i) {
      state.fields.push_back(row[i].is_null() ? std::nullopt : std::optional(row[i].as<std::string>()));
    }
    outcome.state.emplace_back(row[0].as<std::string>(), state);
  }
  std::map<std::string, std::vector<std::int64_t>> streams;
  for (const auto& row : txn.exec("SELECT destination, partition_key, sequence FROM outbox ORDER BY sequence")) {
    streams[row[0].as<std::string>() + " " + row[1].as<std::string>()].push_back(row[2].as<std::int64_t>());
  }
  for (const auto& [stream, numbers] : streams) {
    bool gapless = true;
    for (std::size_t i = 0; i < numbers.size(); ++i) gapless = gapless && numbers[i] == static_cast<std::int64_t>(i + 1);
    std::string text = "1.." + std::to_string(numbers.size());
    if (!gapless) {
      text.clear();
      for (const auto number : numbers) text += (text.empty() ? "" : ",") + std::to_string(number);
    }
    outcome.sequences[stream] = text;
  }
  for (const auto& row : txn.exec("SELECT idempotency_key FROM outbox ORDER BY idempotency_key COLLATE \"C\"")) {
    outcome.outbox_keys.push_back(row[0].as<std::string>());
  }
  // raw_bytes holds the exact bytes when raw could not (NUL, invalid UTF-8).
  for (const auto& row : txn.exec_params(
           "SELECT reason, position, encode(COALESCE(raw_bytes, convert_to(raw, 'UTF8')), 'hex'), entity, "
           "COALESCE(field, '') FROM quarantine WHERE pipeline = $1",
           pipeline)) {
    const std::string hex = row[2].as<std::string>();
    std::string raw;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    outcome.quarantine.push_back(
        {row[0].as<std::string>(), row[1].as<std::string>(), raw, row[3].as<std::string>(), row[4].as<std::string>()});
  }
  std::sort(outcome.quarantine.begin(), outcome.quarantine.end());
  const auto totals = txn.exec_params1(
      "SELECT COALESCE(sum(inserted), 0), COALESCE(sum(updated), 0), COALESCE(sum(unchanged), 0), "
      "COALESCE(sum(stale), 0), COALESCE(sum(superseded), 0), COALESCE(sum(duplicate), 0), "
      "COALESCE(sum(invalid), 0), COALESCE(sum(conflict), 0) FROM batch_ledger WHERE pipeline = $1",
      pipeline);
  for (std::size_t i = 0; i < outcome.totals.size(); ++i) outcome.totals[i] = totals[static_cast<int>(i)].as<std::uint64_t>();
  const auto checkpoint = txn.exec_params("SELECT position FROM checkpoint WHERE pipeline = $1", pipeline);
  if (!checkpoint.empty()) outcome.checkpoint = checkpoint[0][0].as<std::string>();
  return outcome;
}

namespace {

std::string describe(const StateRow& row) {
  std::string text = "rev " + std::to_string(row.revision);
  for (const auto& field : row.fields) text += ", " + field.value_or("(none)");
  return text;
}

std::string printable(std::string_view raw) {
  std::string out;
  for (unsigned char c : raw) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

std::string compare(const Outcome& expected, const Outcome& actual) {
  std::ostringstream diff;
  const std::map<std::string, StateRow> want(expected.state.begin(), expected.state.end());
  const std::map<std::string, StateRow> got(actual.state.begin(), actual.state.end());
  for (const auto& [key, row] : want) {
    const auto found = got.find(key);
    if (found == got.end()) {
      diff << "state " << key << ": missing, expected " << describe(row) << "\n";
    } else if (found->second != row) {
      diff << "state " << key << ": expected " << describe(row) << ", got " << describe(found->second) << "\n";
    }
  }
  for (const auto& [key, row] : got) {
    if (!want.contains(key)) diff << "state " << key << ": unexpected " << describe(row) << "\n";
  }
  std::vector<std::string> missing, extra;
  std::set_difference(expected.outbox_keys.begin(), expected.outbox_keys.end(), actual.outbox_keys.begin(),
                      actual.outbox_keys.end(), std::back_inserter(missing));
  std::set_difference(actual.outbox_keys.begin(), actual.outbox_keys.end(), expected.outbox_keys.begin(),
                      expected.outbox_keys.end(), std::back_inserter(extra));
  for (const auto& key : missing) diff << "outbox " << key << ": missing\n";
  for (const auto& key : extra) diff << "outbox " << key << ": unexpected (or duplicate)\n";
  std::vector<QuarantineEntry> lacking, surplus;
  std::set_difference(expected.quarantine.begin(), expected.quarantine.end(), actual.quarantine.begin(),
                      actual.quarantine.end(), std::back_inserter(lacking));
  std::set_difference(actual.quarantine.begin(), actual.quarantine.end(), expected.quarantine.begin(),
                      expected.quarantine.end(), std::back_inserter(surplus));
  for (const auto& entry : lacking) {
    diff << "quarantine missing: " << entry.reason << " (" << entry.entity << ", field " << entry.field << ") at "
         << entry.position << ": " << printable(entry.raw) << "\n";
  }
  for (const auto& entry : surplus) {
    diff << "quarantine unexpected: " << entry.reason << " (" << entry.entity << ", field " << entry.field << ") at "
         << entry.position << ": " << printable(entry.raw) << "\n";
  }
  for (std::size_t i = 0; i < kOutcomes.size(); ++i) {
    if (expected.totals[i] != actual.totals[i]) {
      diff << "ledger " << kOutcomes[i] << ": expected " << expected.totals[i] << ", got " << actual.totals[i] << "\n";
    }
  }
  for (const auto& [stream, numbers] : expected.sequences) {
    const auto found = actual.sequences.find(stream);
    const std::string got = found == actual.sequences.end() ? "none" : found->second;
    if (got != numbers) diff << "sequences " << stream << ": expected " << numbers << ", got " << got << "\n";
  }
  for (const auto& [stream, numbers] : actual.sequences) {
    if (!expected.sequences.contains(stream)) diff << "sequences " << stream << ": unexpected " << numbers << "\n";
  }
  if (expected.checkpoint != actual.checkpoint) {
    diff << "checkpoint: expected " << expected.checkpoint << ", got " << actual.checkpoint << "\n";
  }
  return diff.str();
}

Tally tally(const Outcome& expected, const Outcome& actual) {
  Tally result;
  const std::map<std::string, StateRow> got(actual.state.begin(), actual.state.end());
  for (const auto& [key, row] : expected.state) {
    const auto found = got.find(key);
    if (found == got.end() || found->second.revision < row.revision) ++result.lost_corrections;
  }
  const std::set<std::string> unique(actual.outbox_keys.begin(), actual.outbox_keys.end());
  result.duplicate_effects = actual.outbox_keys.size() - unique.size();
  return result;
}

}  // namespace tidemark::testing::oracle
