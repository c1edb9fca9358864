#pragma once
// The limits a run keeps (docs/configuration.md: max_batch_bytes, max_rejected). The
// config parses them; the run controller enforces them.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tidemark::pipeline {

// 16 MiB: two batches in flight (one committing, one prepared) stay within a 64 MiB aim.
inline constexpr std::size_t kDefaultMaxBatchBytes = 16 * 1024 * 1024;

// max_rejected: how many rejected (invalid + conflict) records a run may have, as a count
// ("100") or as a share of the run's input so far ("5%"). The batch that crosses it rolls
// back and the run fails.
struct RejectionLimit {
  std::uint64_t count = 0;
  std::optional<double> percent;  // set for "N%"
  std::string text;               // as written, for messages

  bool exceeded_by(std::uint64_t rejected, std::uint64_t input) const;
};

// Where a run stood when the batch in hand took its rejected records past the limit.
struct RejectionTally {
  std::string pipeline;
  std::uint64_t batch = 0;  // the batch that crossed it, 1-based
  std::uint64_t invalid = 0;
  std::uint64_t conflict = 0;
  std::uint64_t input = 0;  // the run's input so far, that batch's included
  std::string checkpoint;   // where the checkpoint stays: after the batch before; empty at the start
  bool dry_run = false;     // a dry run commits nothing, so it says what a run would keep
};

// The error a run fails with when `tally` exceeds `limit`: the batch, the counts, the
// threshold as written, and what stays (the checkpoint; in a dry run, nothing at all).
std::string rejection_limit_message(const RejectionLimit& limit, const RejectionTally& tally);

// "N" (an integer) or "N%" (0 to 100, fraction digits allowed); nullopt when malformed.
std::optional<RejectionLimit> parse_rejection_limit(std::string_view text);

}  // namespace tidemark::pipeline
