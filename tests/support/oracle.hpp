#pragma once
// An independent model of what one clean run leaves behind, written from docs/rules.md and
// the public contract (docs/cli.md "Outcomes") only: it shares no code with pipeline/ or
// connectors/ (its own CSV reader, its own decimal and timestamp handling), so a bug in the
// pipeline cannot hide in both.
// The crash tests compare the database after crashes and restarts with its prediction.
#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tidemark::testing::oracle {

struct SourceFile {
  std::string name;     // inside the source folder
  std::string content;  // the bytes written
};

struct StateRow {
  std::int64_t revision = 0;
  std::string amount;  // canonical numeric(12,2) text, "-130.05"
  std::optional<std::string> account;
  std::optional<std::int64_t> occurred_at_us;  // UTC microseconds since the epoch
  friend auto operator<=>(const StateRow&, const StateRow&) = default;
};

struct QuarantineEntry {
  std::string reason;    // "invalid" or "conflict"
  std::string position;  // "file:line N (byte B)"
  std::string raw;       // the exact bytes received, without the line terminator
  friend auto operator<=>(const QuarantineEntry&, const QuarantineEntry&) = default;
};

// The eight outcome counts, in INTERFACE order.
inline constexpr std::array<std::string_view, 8> kOutcomes = {
    "inserted", "updated", "unchanged", "stale", "superseded", "duplicate", "invalid", "conflict"};
using Totals = std::array<std::uint64_t, 8>;

// What the database holds for one pipeline: predicted by expect(), read by observe().
struct Outcome {
  std::vector<std::pair<std::string, StateRow>> state;  // by transaction_id
  std::vector<std::string> outbox_keys;                  // sorted; a duplicate appears twice
  std::vector<QuarantineEntry> quarantine;               // sorted
  Totals totals{};                                       // summed over the batch ledger
  std::string checkpoint;                                // "file:offset", "" for none
};

// The outcome of one clean run of the CSV `files` (ignoring names without the .csv
// extension, read in lexical order) in batches of `batch_size` records, with one outbox row
// per accepted change for each of `destinations`.
Outcome expect(std::vector<SourceFile> files, std::size_t batch_size, const std::vector<std::string>& destinations);

// Reads the tables of `pipeline` from the database at `url`.
Outcome observe(const std::string& url, const std::string& pipeline);

// Differences between expected and actual, one per line; "" when they agree.
std::string compare(const Outcome& expected, const Outcome& actual);

// Measures for the figures in docs/guarantees.md.
struct Tally {
  std::uint64_t lost_corrections = 0;   // keys missing or behind their expected revision
  std::uint64_t duplicate_effects = 0;  // outbox rows beyond one per idempotency key
};
Tally tally(const Outcome& expected, const Outcome& actual);

// RFC 4180 field text: quoted when it holds a comma, quote, CR or LF.
std::string csv_field(std::string_view value);

}  // namespace tidemark::testing::oracle
