#include "tests/support/run_helpers.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "connectors/file/file_source.hpp"

namespace tidemark::testing {

namespace {

std::atomic<int> temp_counter{0};

Rows to_rows(const pqxx::result& result) {
  Rows rows;
  for (const auto& row : result) {
    auto& out = rows.emplace_back();
    for (const auto& field : row) out.emplace_back(field.is_null() ? "<null>" : field.c_str());
  }
  return rows;
}

}  // namespace

TempDir::TempDir()
    : path_(std::filesystem::temp_directory_path() /
            ("tidemark-itest-" + std::to_string(getpid()) + "-" + std::to_string(temp_counter++))) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::filesystem::path TempDir::write(const std::string& name, const std::string& content) const {
  const auto file = path_ / name;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + file.string());
  return file;
}

void TempDir::append(const std::string& name, const std::string& content) const {
  std::ofstream out(path_ / name, std::ios::binary | std::ios::app);
  out << content;
  if (!out) throw std::runtime_error("cannot append to " + (path_ / name).string());
}

pipeline::db::RetryPolicy fast_retries() {
  pipeline::db::RetryPolicy policy;
  policy.max_attempts = 6;
  policy.base_delay = std::chrono::milliseconds(10);
  policy.max_delay = std::chrono::milliseconds(100);
  return policy;
}

pipeline::RunRequest file_request(const TestDatabase& db, const std::string& pipeline,
                                  const std::filesystem::path& source, std::size_t batch_size, bool replay,
                                  connectors::file::Format format) {
  pipeline::RunRequest request;
  request.pipeline = pipeline;
  request.database = &db.database();
  request.open_source = [source, format] { return connectors::file::open_file_source(source, format); };
  request.batch_size = batch_size;
  request.replay = replay;
  request.destinations = {"ledger"};
  request.retry = fast_retries();
  return request;
}

namespace {

void wait_for_tidemark_backends(pqxx::nontransaction& txn, int count) {
  for (int i = 0; i < 500; ++i) {
    const auto left = txn.exec(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND application_name LIKE 'tidemark%'")[0][0];
    if (left.as<int>() == count) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("not " + std::to_string(count) + " tidemark backends connected after 5 s");
}

}  // namespace

void wait_for_tidemark_backends(const std::string& url, int count) {
  // A plain connection has no application_name, so it does not count itself.
  pqxx::connection connection(url);
  pqxx::nontransaction txn(connection);
  wait_for_tidemark_backends(txn, count);
}

void wait_for_no_tidemark_backends(const std::string& url) { wait_for_tidemark_backends(url, 0); }

std::int64_t sessions_opened_by(const std::string& url, const std::function<void()>& action, int kept) {
  pqxx::connection connection(url);
  pqxx::nontransaction txn(connection);
  // This session's own start is counted once its statistics are flushed, which the next
  // idle moment does when forced; an ended backend flushes before it leaves pg_stat_activity.
  txn.exec("SELECT pg_stat_force_next_flush()");
  const auto sessions = [&] {
    return txn.exec("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")[0][0].as<std::int64_t>();
  };
  const std::int64_t before = sessions();
  action();
  wait_for_tidemark_backends(txn, kept);
  return sessions() - before;
}

int terminate_tidemark_backends(const TestDatabase& db) {
  int terminated = 0;
  {
    pqxx::connection connection(db.url());
    pqxx::nontransaction txn(connection);
    terminated = txn.exec("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                          "WHERE datname = current_database() AND application_name LIKE 'tidemark%'")[0][0]
                     .as<int>();
  }
  wait_for_no_tidemark_backends(db.url());
  return terminated;
}

Rows query_rows(const TestDatabase& db, const std::string& sql) {
  pqxx::connection connection(db.url());
  pqxx::nontransaction txn(connection);
  return to_rows(txn.exec(sql));
}

Rows state_row(const TestDatabase& db, const std::string& transaction_id) {
  pqxx::connection connection(db.url());
  pqxx::nontransaction txn(connection);
  return to_rows(txn.exec_params(
      "SELECT transaction_id, source_revision, amount, account_id, occurred_at AT TIME ZONE 'UTC', pipeline, "
      "created_at, updated_at FROM transaction_state WHERE transaction_id = $1",
      transaction_id));
}

std::string counts_text(const pipeline::OutcomeCounts& counts) {
  std::string text;
  for (pipeline::Outcome outcome : pipeline::kAllOutcomes) {
    if (counts[outcome] == 0) continue;
    if (!text.empty()) text += ", ";
    text += std::string(pipeline::to_string(outcome)) + " " + std::to_string(counts[outcome]);
  }
  return text.empty() ? "none" : text;
}

}  // namespace tidemark::testing
