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

// ---- The field rules of INTERFACE "Input records" --------------------------------------

// Valid UTF-8 of 1..128 code points, none of them a control character.
bool valid_identifier(std::string_view text) {
  std::size_t code_points = 0;
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
      return false;
    }
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      point = (point << 6) | (next & 0x3F);
    }
    static constexpr std::uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < kMinimum[length] || point > 0x10FFFF || (point >= 0xD800 && point <= 0xDFFF)) return false;
    if (point < 0x20 || (point >= 0x7F && point <= 0x9F)) return false;
    i += length;
    ++code_points;
  }
  return code_points >= 1 && code_points <= 128;
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::int64_t> parse_revision(std::string_view text) {
  if (!all_digits(text)) return std::nullopt;
  while (text.size() > 1 && text.front() == '0') text.remove_prefix(1);
  constexpr std::string_view kMax = "9223372036854775807";
  if (text.size() > kMax.size() || (text.size() == kMax.size() && text > kMax)) return std::nullopt;
  std::int64_t value = 0;
  for (char c : text) value = value * 10 + (c - '0');
  return value;
}

// numeric(12,2): sign, 1..10 integer digits, optionally a point and 1..2 fraction digits.
std::optional<std::int64_t> parse_cents(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  const std::size_t point = text.find('.');
  const std::string_view whole = text.substr(0, point);
  const std::string_view fraction = point == std::string_view::npos ? std::string_view{} : text.substr(point + 1);
  if (!all_digits(whole) || whole.size() > 10) return std::nullopt;
  if (point != std::string_view::npos && (!all_digits(fraction) || fraction.size() > 2)) return std::nullopt;
  std::int64_t cents = 0;
  for (char c : whole) cents = cents * 10 + (c - '0');
  cents *= 100;
  if (!fraction.empty()) cents += (fraction[0] - '0') * 10 + (fraction.size() > 1 ? fraction[1] - '0' : 0);
  return negative ? -cents : cents;
}

std::string cents_text(std::int64_t cents) {
  const bool negative = cents < 0;
  const std::uint64_t magnitude = negative ? 0 - static_cast<std::uint64_t>(cents) : static_cast<std::uint64_t>(cents);
  std::string fraction = std::to_string(magnitude % 100);
  if (fraction.size() == 1) fraction = "0" + fraction;
  return (negative && magnitude != 0 ? "-" : "") + std::to_string(magnitude / 100) + "." + fraction;
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

// RFC 3339 date-time with an offset: YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|±HH:MM).
std::optional<std::int64_t> parse_rfc3339(std::string_view text) {
  auto number = [&](std::size_t at, std::size_t width) -> std::optional<int> {
    if (at + width > text.size() || !all_digits(text.substr(at, width))) return std::nullopt;
    int value = 0;
    for (std::size_t i = 0; i < width; ++i) value = value * 10 + (text[at + i] - '0');
    return value;
  };
  const auto year = number(0, 4), month = number(5, 2), day = number(8, 2);
  const auto hour = number(11, 2), minute = number(14, 2), second = number(17, 2);
  if (!year || !month || !day || !hour || !minute || !second || text.size() < 20 || text[4] != '-' ||
      text[7] != '-' || text[10] != 'T' || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  const bool leap = (*year % 4 == 0 && *year % 100 != 0) || *year % 400 == 0;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (*month < 1 || *month > 12 || *day < 1 || *day > kDays[*month - 1] + (*month == 2 && leap ? 1 : 0) ||
      *hour > 23 || *minute > 59 || *second > 59) {
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
    const auto offset_hours = number(at + 1, 2), offset_minutes = number(at + 4, 2);
    if (!offset_hours || !offset_minutes || *offset_hours > 23 || *offset_minutes > 59) return std::nullopt;
    offset_seconds = (*offset_hours * 3600 + *offset_minutes * 60) * (zone[0] == '-' ? -1 : 1);
  }
  const std::int64_t seconds =
      days_since_epoch(*year, *month, *day) * 86400 + *hour * 3600 + *minute * 60 + *second - offset_seconds;
  return seconds * 1000000 + micros;
}

struct Valid {
  std::string key;
  std::int64_t revision = 0;
  StateRow payload;  // revision filled in

  bool same_payload(const Valid& other) const {
    return payload.amount == other.payload.amount && payload.account == other.payload.account &&
           payload.occurred_at_us == other.payload.occurred_at_us;
  }
};

struct InputRecord {
  std::string raw;
  std::string position;
  std::optional<Valid> valid;  // nullopt: invalid
};

// Header name -> column; the five fields by INTERFACE name.
std::optional<Valid> validate(const CsvRow& row, const std::map<std::string, std::size_t>& columns,
                              std::size_t column_count) {
  if (row.malformed || row.fields.size() != column_count) return std::nullopt;
  auto field = [&](const std::string& name) -> std::optional<std::string> {
    const auto found = columns.find(name);
    if (found == columns.end() || row.fields[found->second].empty()) return std::nullopt;
    return row.fields[found->second];
  };
  const auto key = field("transaction_id");
  const auto revision_text = field("source_revision");
  const auto amount_text = field("amount");
  const auto account = field("account_id");
  const auto occurred = field("occurred_at");
  if (!key || !valid_identifier(*key) || !revision_text || !amount_text) return std::nullopt;
  const auto revision = parse_revision(*revision_text);
  const auto cents = parse_cents(*amount_text);
  if (!revision || !cents) return std::nullopt;
  if (account && !valid_identifier(*account)) return std::nullopt;
  std::optional<std::int64_t> occurred_at_us;
  if (occurred) {
    occurred_at_us = parse_rfc3339(*occurred);
    if (!occurred_at_us) return std::nullopt;
  }
  Valid valid{*key, *revision, StateRow{*revision, cents_text(*cents), account, occurred_at_us}};
  return valid;
}

enum Index : std::size_t { kInserted, kUpdated, kUnchanged, kStale, kSuperseded, kDuplicate, kInvalid, kConflict };

}  // namespace

std::string csv_field(std::string_view value) {
  if (value.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(value);
  std::string quoted = "\"";
  for (char c : value) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

Outcome expect(std::vector<SourceFile> files, std::size_t batch_size, const std::vector<std::string>& destinations) {
  std::erase_if(files, [](const SourceFile& file) {
    return file.name.size() < 4 || file.name.compare(file.name.size() - 4, 4, ".csv") != 0;
  });
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });

  Outcome outcome;
  std::vector<InputRecord> input;
  for (const SourceFile& file : files) {
    const std::vector<CsvRow> rows = read_csv(file.content);
    if (rows.empty()) continue;
    std::map<std::string, std::size_t> columns;
    for (std::size_t i = 0; i < rows[0].fields.size(); ++i) columns.emplace(rows[0].fields[i], i);
    for (std::size_t i = 1; i < rows.size(); ++i) {
      const CsvRow& row = rows[i];
      input.push_back({row.raw,
                       file.name + ":" + std::to_string(row.line) + " (byte " + std::to_string(row.offset) + ")",
                       validate(row, columns, rows[0].fields.size())});
      outcome.checkpoint = file.name + ":" + std::to_string(row.end_offset);
    }
  }

  std::map<std::string, StateRow> state;
  std::set<std::string> outbox;
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
                      (stored->second.amount != record->payload.amount ||
                       stored->second.account != record->payload.account ||
                       stored->second.occurred_at_us != record->payload.occurred_at_us);
      for (std::size_t j = begin; j < end && !conflict; ++j) {
        const auto& other = input[j].valid;
        conflict = other && other->key == record->key && other->revision == record->revision &&
                   !other->same_payload(*record);
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
            outbox.insert(destination + ":" + record.key + ":" + std::to_string(record.revision));
          }
        }
      }
      ++outcome.totals[*verdict[i - begin]];
      if (*verdict[i - begin] == kInvalid || *verdict[i - begin] == kConflict) {
        outcome.quarantine.push_back(
            {*verdict[i - begin] == kInvalid ? "invalid" : "conflict", input[i].position, input[i].raw});
      }
    }
    for (auto& [key, row] : changes) state[key] = row;
  }
  outcome.state.assign(state.begin(), state.end());
  outcome.outbox_keys.assign(outbox.begin(), outbox.end());
  std::sort(outcome.quarantine.begin(), outcome.quarantine.end());
  return outcome;
}

Outcome observe(const std::string& url, const std::string& pipeline) {
  pqxx::connection connection(url);
  pqxx::read_transaction txn(connection);
  Outcome outcome;
  for (const auto& row : txn.exec_params(
           "SELECT transaction_id, source_revision, amount::text, account_id, "
           "(extract(epoch FROM occurred_at) * 1000000)::bigint FROM transaction_state WHERE pipeline = $1 "
           "ORDER BY transaction_id COLLATE \"C\"",
           pipeline)) {
    StateRow state{row[1].as<std::int64_t>(), row[2].as<std::string>(), std::nullopt, std::nullopt};
    if (!row[3].is_null()) state.account = row[3].as<std::string>();
    if (!row[4].is_null()) state.occurred_at_us = row[4].as<std::int64_t>();
    outcome.state.emplace_back(row[0].as<std::string>(), state);
  }
  for (const auto& row : txn.exec("SELECT idempotency_key FROM outbox ORDER BY idempotency_key COLLATE \"C\"")) {
    outcome.outbox_keys.push_back(row[0].as<std::string>());
  }
  // raw_bytes holds the exact bytes when raw could not (NUL, invalid UTF-8).
  for (const auto& row : txn.exec_params(
           "SELECT reason, position, encode(COALESCE(raw_bytes, convert_to(raw, 'UTF8')), 'hex') "
           "FROM quarantine WHERE pipeline = $1",
           pipeline)) {
    const std::string hex = row[2].as<std::string>();
    std::string raw;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) raw += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    outcome.quarantine.push_back({row[0].as<std::string>(), row[1].as<std::string>(), raw});
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
  std::ostringstream text;
  text << "rev " << row.revision << ", amount " << row.amount << ", account " << row.account.value_or("(none)")
       << ", occurred_at_us "
       << (row.occurred_at_us ? std::to_string(*row.occurred_at_us) : std::string("(none)"));
  return text.str();
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
    diff << "quarantine missing: " << entry.reason << " at " << entry.position << ": " << printable(entry.raw) << "\n";
  }
  for (const auto& entry : surplus) {
    diff << "quarantine unexpected: " << entry.reason << " at " << entry.position << ": " << printable(entry.raw)
         << "\n";
  }
  for (std::size_t i = 0; i < kOutcomes.size(); ++i) {
    if (expected.totals[i] != actual.totals[i]) {
      diff << "ledger " << kOutcomes[i] << ": expected " << expected.totals[i] << ", got " << actual.totals[i] << "\n";
    }
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
