#pragma once
// Text-format COPY ... FROM STDIN with lines the caller has already formatted (see
// db::append_copy_text). libpqxx 6.4 keeps stream_to::write_raw_line private, and its tuple
// interface escapes field by field; the batch path formats each line once instead.
#include <memory>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace tidemark::pipeline::db {

class CopyWriter {
 public:
  CopyWriter(pqxx::transaction_base& txn, const std::string& table, const std::vector<std::string>& columns);
  ~CopyWriter();
  CopyWriter(const CopyWriter&) = delete;
  CopyWriter& operator=(const CopyWriter&) = delete;

  void write_line(const std::string& line);  // one row, tab-separated, escaped, no newline
  void complete();                            // ends the COPY; required before the next statement

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidemark::pipeline::db
