#pragma once
// Reading a statement's rows by column name into a struct, so that a statement's columns can
// be reordered or added without a reader that silently takes the wrong one (as rows[0][7]
// would). Each statement with a row type gives it one function, `static T read(const db::Row&)`,
// that names its columns once; db::read_first and db::read_all apply it.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pqxx/pqxx>

namespace tidemark::pipeline::db {

class Row {
 public:
  // A copy (pqxx::row shares its result): result[i] is a temporary.
  explicit Row(pqxx::row row) : row_(std::move(row)) {}

  // The column's value; a pqxx error when the statement has no such column, or when the
  // value is NULL or does not convert.
  template <typename T>
  T get(const char* column) const {
    return row_[column].as<T>();
  }
  // Text as stored, "" for NULL (where NULL and empty mean the same to the reader).
  std::string text(const char* column) const { return row_[column].c_str(); }
  // nullopt for NULL.
  template <typename T>
  std::optional<T> optional(const char* column) const {
    const pqxx::field field = row_[column];
    if (field.is_null()) return std::nullopt;
    return field.as<T>();
  }
  // A bytea column's bytes.
  std::string bytes(const char* column) const { return pqxx::binarystring(row_[column]).str(); }

 private:
  pqxx::row row_;
};

template <typename T>
T read_row(const pqxx::row& row) {
  return T::read(Row(row));
}

// The first row, nullopt when there is none.
template <typename T>
std::optional<T> read_first(const pqxx::result& rows) {
  if (rows.empty()) return std::nullopt;
  return read_row<T>(rows[0]);
}

template <typename T>
std::vector<T> read_all(const pqxx::result& rows) {
  std::vector<T> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(read_row<T>(row));
  return out;
}

}  // namespace tidemark::pipeline::db
