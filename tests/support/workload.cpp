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

struct Payload {
  std::int64_t cents = 0;
  std::optional<std::string> account;
  std::optional<std::int64_t> occurred_us;
};

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
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

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
    workload.files.push_back({"notes.txt", "transaction_id,source_revision,amount\nignored,1,1.00\n"});
    workload.files.push_back({"part-99.CSV", "transaction_id,source_revision,amount\nignored,1,1.00\n"});
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
    layout.columns = {"transaction_id", "source_revision", "amount", "account_id", "occurred_at"};
    if (chance(0.15)) layout.columns.pop_back();
    if (chance(0.3)) layout.columns.push_back("note");
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

  Payload fresh_payload() {
    Payload payload;
    payload.cents = chance(0.02) ? (chance(0.5) ? 999999999999 : -999999999999) : between(-500000, 5000000);
    if (chance(0.8)) {
      payload.account = (chance(0.05) ? "acc," : "acc-") + std::to_string(1 + pick(4));
    }
    if (chance(0.7)) {
      payload.occurred_us = (1704067200 + between(0, 365 * 86400)) * 1000000 + (chance(0.3) ? between(0, 999999) : 0);
    }
    return payload;
  }

  std::string amount_text(std::int64_t cents) {
    const std::uint64_t magnitude = cents < 0 ? 0 - static_cast<std::uint64_t>(cents) : static_cast<std::uint64_t>(cents);
    const std::string sign = cents < 0 ? "-" : (chance(0.1) ? "+" : "");
    const std::string whole = std::to_string(magnitude / 100);
    const std::uint64_t fraction = magnitude % 100;
    if (fraction == 0) {
      static const char* const kForms[] = {"", ".0", ".00"};
      return sign + whole + kForms[pick(3)];
    }
    if (fraction % 10 == 0) return sign + whole + "." + std::to_string(fraction / 10) + (chance(0.5) ? "0" : "");
    return sign + whole + "." + two_digits(static_cast<std::int64_t>(fraction));
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
    fields["transaction_id"] = key;
    fields["source_revision"] = std::to_string(revision);
    fields["amount"] = amount_text(payload.cents);
    fields["account_id"] = payload.account.value_or("");
    fields["occurred_at"] = payload.occurred_us ? time_text(*payload.occurred_us) : "";
    fields["note"] = chance(0.3) ? "hello, \"world\"" : "n" + std::to_string(pick(100));
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
        if (key.id != fields["transaction_id"]) continue;
        const auto revision = std::stoll(fields["source_revision"]);
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
      other.cents += 1 + static_cast<std::int64_t>(pick(50));
      if (other.cents > 999999999999) other.cents -= 100;
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
      Payload other = key.payloads[key.max_revision];
      other.account = other.account ? std::nullopt : std::optional<std::string>("acc-9");
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

  std::string invalid_line(const Layout& layout) {
    Fields fields = render(keys_.empty() || chance(0.5) ? next_key() : existing_key().id, between(0, 9), fresh_payload());
    static const std::vector<std::pair<std::string, std::string>> kBreaks = {
        {"transaction_id", ""},
        {"transaction_id", std::string(129, 'x')},
        {"transaction_id", "tx\t1"},
        {"transaction_id", "tx-\xFF-1"},
        {"source_revision", "-1"},
        {"source_revision", "1.5"},
        {"source_revision", "abc"},
        {"source_revision", ""},
        {"source_revision", "9223372036854775808"},
        {"source_revision", "+3"},
        {"amount", "130.001"},
        {"amount", "12345678901.00"},
        {"amount", "1e3"},
        {"amount", "NaN"},
        {"amount", "Infinity"},
        {"amount", ""},
        {"amount", "12,5"},
        {"account_id", "acc\n1"},
        {"account_id", std::string(129, 'a')},
        {"occurred_at", "2024-05-01T10:00:00"},
        {"occurred_at", "2024-02-30T10:00:00Z"},
        {"occurred_at", "yesterday"},
        {"occurred_at", "2024-05-01T25:00:00Z"},
    };
    const auto& [column, value] = kBreaks[pick(kBreaks.size())];
    if (has(layout, column)) {
      fields[column] = value;
    } else {
      fields["amount"] = "NaN";
    }
    return join(encode(layout, fields));
  }

  std::string undecodable_line(const Layout& layout) {
    const Fields fields = render(next_key(), 1, fresh_payload());
    std::vector<std::string> encoded = encode(layout, fields);
    const auto amount = static_cast<std::size_t>(
        std::find(layout.columns.begin(), layout.columns.end(), "amount") - layout.columns.begin());
    switch (pick(4)) {
      case 0: encoded.pop_back(); break;                     // too few columns
      case 1: encoded.push_back("extra"); break;             // too many columns
      case 2: encoded[amount] = "12\"5"; break;              // a quote inside an unquoted field
      default: encoded[amount] = "\"12.50\"x"; break;        // text after a closing quote
    }
    return join(encoded);
  }

  std::mt19937_64 rng_;
  std::vector<Key> keys_;
  std::vector<Fields> recent_;  // valid records written lately, for duplicates
  int next_key_ = 0;
};

}  // namespace

Workload generate_workload(std::uint64_t seed, const WorkloadSize& size) {
  return Generator(seed).generate(seed, size);
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
