#pragma once
// The limits a run keeps (INTERFACE "Configuration": max_batch_bytes, max_rejected). The
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

// "N" (an integer) or "N%" (0 to 100, fraction digits allowed); nullopt when malformed.
std::optional<RejectionLimit> parse_rejection_limit(std::string_view text);

}  // namespace tidemark::pipeline
