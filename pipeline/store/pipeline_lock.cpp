#include "pipeline/store/pipeline_lock.hpp"

#include <string_view>

#include "pipeline/store/pg/row.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline {

namespace {

// The text the lock's key hashes (sql/run/try_lock_pipeline.sql). The second's prefix differs
// from the first's before the name begins, so no pipeline's first lock is another's second.
std::string lock_key(const std::string& pipeline, PipelineLock lock) {
  return (lock == PipelineLock::kSecond ? "tidemark pipeline, second session " : "tidemark pipeline ") + pipeline;
}

// SQLSTATE 55P03: lock_timeout passed while waiting for a lock.
constexpr std::string_view kLockNotAvailable = "55P03";

}  // namespace

void take_pipeline_lock(pqxx::connection& connection, const std::string& pipeline, PipelineLock lock) {
  const std::string key = lock_key(pipeline, lock);
  pqxx::nontransaction txn(connection);
  if (db::Row(txn.exec_params1(std::string(sql::kRunTryLockPipeline), key)).get<bool>("locked")) return;
  const auto holder = txn.exec_params(std::string(sql::kRunPipelineLockHolder), key);
  std::string who = "another process";
  if (!holder.empty()) {
    const db::Row backend(holder[0]);
    who = "backend pid " + backend.text("pid") + " (" + backend.text("application_name") + ", connected since " +
          backend.text("connected_since") + ")";
  }
  throw PipelineBusy("pipeline '" + pipeline + "' is already running: " + who +
                     " holds it. Wait for that run to finish, then run again.");
}

void release_pipeline_lock(pqxx::connection& connection, const std::string& pipeline, PipelineLock lock) noexcept {
  if (!connection.is_open()) return;
  try {
    pqxx::nontransaction txn(connection);
    txn.exec_params(std::string(sql::kRunUnlockPipeline), lock_key(pipeline, lock));
  } catch (const std::exception&) {
    // Only the next run's wait is at stake: the session ends soon and takes the lock along.
  }
}

bool wait_for_pipeline_lock(pqxx::connection& connection, const std::string& pipeline,
                            std::chrono::milliseconds timeout) {
  pqxx::work txn(connection);
  txn.exec_params(std::string(sql::kRunSetLockTimeout), std::to_string(timeout.count()) + "ms");
  try {
    txn.exec_params(std::string(sql::kRunWaitForPipelineLock), lock_key(pipeline, PipelineLock::kFirst));
  } catch (const pqxx::sql_error& error) {
    if (error.sqlstate() == kLockNotAvailable) return false;
    throw;
  }
  txn.commit();  // lets go of the lock
  return true;
}

}  // namespace tidemark::pipeline
