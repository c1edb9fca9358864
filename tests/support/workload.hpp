#pragma once
// Seeded workloads for the crash tests: a folder of CSV files whose records mix every case
// the pipeline decides — new keys, newer and stale revisions, exact and equivalent
// duplicates, several revisions of a key close together, same-revision conflicts (in one
// batch and against earlier batches), invalid records of every kind, undecodable lines —
// with files that differ in column order, extra columns, CRLF, BOM and a missing final
// newline, so that batches cross file boundaries. The same seed gives the same bytes.
// The records are of one entity (oracle::EntitySpec): the built-in one or a declared one,
// each field spelt in the ways its type accepts and broken in the ways it rejects.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/oracle.hpp"

namespace tidemark::testing {

struct WorkloadSize {
  std::size_t records = 150;  // about this many lines of records
  std::size_t files = 4;      // CSV files (plus a file the source must ignore)
  std::size_t min_batch = 3;  // batch size is drawn from [min_batch, max_batch]
  std::size_t max_batch = 12;
};

struct Workload {
  std::uint64_t seed = 0;
  std::size_t batch_size = 0;
  std::vector<oracle::SourceFile> files;
};

// Records of `entity`: its key, revision and fields, with every type's valid spellings and
// broken values (one broken field per invalid record).
Workload generate_workload(std::uint64_t seed, const WorkloadSize& size = {},
                           const oracle::EntitySpec& entity = oracle::transaction_entity());

// Writes the files into `folder` (created if needed).
void write_workload(const Workload& workload, const std::filesystem::path& folder);

}  // namespace tidemark::testing
