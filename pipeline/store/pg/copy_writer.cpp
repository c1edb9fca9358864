#include "pipeline/store/pg/copy_writer.hpp"

// tablewriter is deprecated in libpqxx 6.4 in favour of stream_to, but it is the one class
// whose raw-line writer is public.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <pqxx/tablewriter>

namespace tidemark::pipeline::db {

struct CopyWriter::Impl {
  Impl(pqxx::transaction_base& txn, const std::string& table, const std::vector<std::string>& columns)
      : writer(txn, table, columns.begin(), columns.end()) {}
  pqxx::tablewriter writer;
};

CopyWriter::CopyWriter(pqxx::transaction_base& txn, const std::string& table, const std::vector<std::string>& columns)
    : impl_(std::make_unique<Impl>(txn, table, columns)) {}

CopyWriter::~CopyWriter() = default;

void CopyWriter::write_line(const std::string& line) { impl_->writer.write_raw_line(line); }

void CopyWriter::complete() { impl_->writer.complete(); }

}  // namespace tidemark::pipeline::db

#pragma GCC diagnostic pop
