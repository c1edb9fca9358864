// Retention (docs/retention.md) against a real PostgreSQL: each kind is deleted past its
// window and kept inside it, in chunks no larger than asked, delivered outbox rows stay while
// a view version is being built, and the runs rolled up equal the runs deleted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "app/retention/retention.hpp"
#include "app/wiring/options.hpp"
#include "pipeline/views/views.hpp"
#include "tests/support/change_log_store.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::app::retention {
namespace {

using namespace std::chrono_literals;
using testing::TestDatabase;
using ::testing::HasSubstr;

void exec(const TestDatabase& db, const std::string& statement) {
  auto connection = db.connect();
  pqxx::work txn(*connection);
  txn.exec(statement);
  txn.commit();
}

// An event of `destination` alone on its key `key` (its outbox idempotency key
// '<destination>:<key>'), logged `age` ago, then delivered or given up on ("dead") the relay's
// way, or left "pending". Settling takes every due event of the destination: a test writes the
// events it leaves pending last.
void outbox_row(const TestDatabase& db, const std::string& key, const std::string& destination,
                const std::string& status, const std::string& age) {
  auto connection = db.connect();
  {
    pqxx::work txn(*connection);
    testing::append_aged_change(txn, destination, key, age);
    txn.commit();
  }
  if (status == "delivered") testing::settle_due(*connection, destination, testing::Settlement::kDelivered);
  if (status == "dead") testing::settle_due(*connection, destination, testing::Settlement::kDead);
}

// A run of `pipeline` requested on `requested`, finished `finished_age` ago (NULL when
// running), with one ledger row per entry of `inputs` (input n = n - 1 inserted + 1 invalid).
std::string run_row(const TestDatabase& db, const std::string& pipeline, const std::string& status,
                    const std::string& requested, const std::string& finished_age,
                    const std::vector<int>& inputs) {
  const std::string finished = finished_age.empty() ? "NULL" : "now() - interval '" + finished_age + "'";
  const std::string id = db.scalar(
      "INSERT INTO runs (pipeline, trigger, mode, status, requested_at, started_at, finished_at) VALUES ('" + pipeline +
      "', 'cli', 'resume', '" + status + "', timestamptz '" + requested + "', timestamptz '" + requested + "', " +
      finished + ") RETURNING id");
  int batch = 0;
  for (const int n : inputs) {
    ++batch;
    exec(db, "INSERT INTO batch_ledger (pipeline, run_id, batch_no, source, start_position, end_position, input, "
             "inserted, updated, unchanged, stale, superseded, duplicate, invalid, conflict, committed_at) VALUES ('" +
                 pipeline + "', " + id + ", " + std::to_string(batch) + ", 's', '0', '1', " + std::to_string(n) +
                 ", " + std::to_string(n - 1) + ", 0, 0, 0, 0, 0, 1, 0, timestamptz '" + requested + "')");
  }
  return id;
}

Options options_with_chunk(std::int64_t chunk) {
  Options options;
  options.redelivery = redelivery(app::config::RelayConfig{});
  options.chunk = chunk;
  return options;
}

std::map<std::string, KindResult> by_kind(const std::vector<KindResult>& results) {
  std::map<std::string, KindResult> kinds;
  for (const auto& result : results) kinds[result.kind] = result;
  return kinds;
}

TEST(RetentionTest, DeliveredOutboxRowsPastTheWindowGoAndEverythingElseStays) {
  TestDatabase db;
  for (int i = 0; i < 3; ++i) outbox_row(db, "old-" + std::to_string(i), "hooks", "delivered", "8 days");
  outbox_row(db, "recent", "hooks", "delivered", "6 days");
  outbox_row(db, "old-dead", "hooks", "dead", "8 days");
  outbox_row(db, "old-pending", "hooks", "pending", "8 days");
  auto connection = db.connect();
  const auto kinds = by_kind(run_retention(*connection, options_with_chunk(kDefaultChunk)));
  EXPECT_EQ(kinds.at("outbox").deleted, 3);
  EXPECT_TRUE(kinds.at("outbox").kept.empty());
  EXPECT_EQ(db.scalar("SELECT string_agg(idempotency_key, ',' ORDER BY id) FROM outbox"),
            "hooks:recent,hooks:old-dead,hooks:old-pending");
}

TEST(RetentionTest, OutboxRowsOfAViewBeingRebuiltAreKeptUntilItIsLive) {
  TestDatabase db;
  exec(db, "INSERT INTO views (name, version, status, position) VALUES ('daily_totals', 1, 'live', 'full history'), "
           "('daily_totals', 2, 'building', 'full history'), ('account_balance', 1, 'live', 'full history')");
  outbox_row(db, "view-old", "daily_totals", "delivered", "8 days");
  outbox_row(db, "balance-old", "account_balance", "delivered", "8 days");
  outbox_row(db, "hook-old", "hooks", "delivered", "8 days");
  auto connection = db.connect();
  auto kinds = by_kind(run_retention(*connection, options_with_chunk(kDefaultChunk)));
  EXPECT_EQ(kinds.at("outbox").deleted, 2);
  ASSERT_EQ(kinds.at("outbox").kept.size(), 1u);
  EXPECT_THAT(kinds.at("outbox").kept[0], HasSubstr("destination daily_totals kept: view daily_totals version 2"));
  EXPECT_EQ(db.scalar("SELECT string_agg(idempotency_key, ',') FROM outbox"), "daily_totals:view-old");

  exec(db, "UPDATE views SET status = 'live' WHERE name = 'daily_totals' AND version = 2");
  kinds = by_kind(run_retention(*connection, options_with_chunk(kDefaultChunk)));
  EXPECT_EQ(kinds.at("outbox").deleted, 1);
  EXPECT_TRUE(kinds.at("outbox").kept.empty());
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox"), "0");
}

// A rebuild registering its version (under the view's lock) while a chunk is about to look at
// the registry: the chunk waits for the lock, then sees the building version and keeps the rows.
TEST(RetentionTest, AChunkWaitsForARebuildBeingRegisteredAndThenKeepsItsRows) {
  TestDatabase db;
  exec(db, "INSERT INTO views (name, version, status, position) VALUES ('daily_totals', 1, 'live', 'full history')");
  outbox_row(db, "view-old", "daily_totals", "delivered", "8 days");
  outbox_row(db, "hook-old", "hooks", "delivered", "8 days");
  auto rebuild = db.connect();
  pqxx::work registering(*rebuild);
  registering.exec("SELECT pg_advisory_xact_lock(hashtext('tidemark view daily_totals'))");
  registering.exec("INSERT INTO views (name, version, status, position) VALUES ('daily_totals', 2, 'building', 'full history')");

  auto job = std::async(std::launch::async, [&] {
    auto connection = db.connect();
    return by_kind(run_retention(*connection, options_with_chunk(kDefaultChunk)));
  });
  // The event: the job's transaction waits for the advisory lock (no sleep; each look is a query).
  auto observer = db.connect();
  while (true) {
    pqxx::read_transaction txn(*observer);
    if (txn.exec1("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")[0].as<long>() > 0) break;
    ASSERT_NE(job.wait_for(std::chrono::seconds(0)), std::future_status::ready) << "the job did not wait for the lock";
  }
  registering.commit();
  const auto kinds = job.get();
  EXPECT_EQ(kinds.at("outbox").deleted, 1);
  EXPECT_EQ(db.scalar("SELECT string_agg(idempotency_key, ',') FROM outbox"), "daily_totals:view-old");
}

// A rebuild from full history replays the destination's outbox: once retention deleted some
// of it, the rebuild is refused rather than build a version that is silently wrong; a
// rebuild from a snapshot does not need the deleted rows.
TEST(RetentionTest, AFullHistoryRebuildIsRefusedOnceRetentionDeletedItsDestinationsEvents) {
  TestDatabase db;
  outbox_row(db, "view-old", "daily_totals", "delivered", "8 days");
  outbox_row(db, "balance-old", "account_balance", "delivered", "8 days");
  outbox_row(db, "view-recent", "daily_totals", "delivered", "1 hour");
  auto connection = db.connect();
  EXPECT_EQ(by_kind(run_retention(*connection, options_with_chunk(kDefaultChunk))).at("outbox").deleted, 2);
  EXPECT_EQ(db.scalar("SELECT string_agg(destination || ':' || deleted_rows, ',' ORDER BY destination) "
                      "FROM tidemark_outbox_trimmed"),
            "account_balance:1,daily_totals:1");
  namespace views = pipeline::views;
  try {
    views::rebuild_view(pipeline::db::Database(db.url()), views::kDailyTotals, 1, views::RebuildSource::kFullHistory);
    FAIL() << "the rebuild from full history was not refused";
  } catch (const views::ViewError& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot be rebuilt from full history: retention deleted 1 delivered events"));
  }
  EXPECT_THROW(views::rebuild_view(pipeline::db::Database(db.url()), views::kAccountBalance, 1, views::RebuildSource::kFullHistory),
               views::ViewError);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM views"), "0");
  EXPECT_EQ(db.scalar("SELECT to_regclass('daily_totals_v1') IS NULL"), "t");
  // The snapshot takes the account's version from its cursor, which its deleted event left
  // at 1 (its balance, from the empty state, is 0).
  EXPECT_EQ(views::rebuild_view(pipeline::db::Database(db.url()), views::kAccountBalance, 1, views::RebuildSource::kSnapshot), 1);
  EXPECT_EQ(db.scalar("SELECT account_id || ' ' || balance || ' ' || version FROM account_balance_v1"), "balance-old 0 1");
  EXPECT_EQ(db.scalar("SELECT status FROM views WHERE name = 'account_balance'"), "live");
}

// A rebuild that waits for the view's lock while a chunk deletes its destination's rows reads
// from a snapshot taken after the chunk committed: it sees the deletion and refuses.
TEST(RetentionTest, ARebuildWaitingForAChunksLockSeesWhatTheChunkDeleted) {
  TestDatabase db;
  auto deleting = db.connect();
  pqxx::work chunk(*deleting);
  chunk.exec("SELECT pg_advisory_xact_lock(hashtext('tidemark view daily_totals'))");
  chunk.exec("INSERT INTO tidemark_outbox_trimmed VALUES ('daily_totals', 3, now() - interval '8 days')");
  auto rebuilding = std::async(std::launch::async, [&] {
    pipeline::views::rebuild_view(pipeline::db::Database(db.url()), pipeline::views::kDailyTotals, 1,
                                  pipeline::views::RebuildSource::kFullHistory);
  });
  auto observer = db.connect();
  while (true) {
    pqxx::read_transaction txn(*observer);
    if (txn.exec1("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")[0].as<long>() > 0) break;
    ASSERT_NE(rebuilding.wait_for(std::chrono::seconds(0)), std::future_status::ready)
        << "the rebuild did not wait for the view's lock";
  }
  chunk.commit();
  EXPECT_THROW(rebuilding.get(), pipeline::views::ViewError);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM views"), "0");
}

TEST(RetentionTest, EveryKindDeletesInChunksNoLargerThanAsked) {
  TestDatabase db;
  for (int i = 0; i < 7; ++i) outbox_row(db, "o" + std::to_string(i), "hooks", "delivered", "8 days");
  for (int i = 0; i < 5; ++i) {
    exec(db, "INSERT INTO quarantine (pipeline, source, reason, detail, raw, format, position, created_at, released_at) "
             "VALUES ('p', 's', 'invalid', 'd', 'raw', 'csv', '" + std::to_string(i) +
                 "', now() - interval '40 days', now() - interval '31 days')");
    exec(db, "INSERT INTO run_requests (request_id, pipeline, received_at) VALUES ('r" + std::to_string(i) +
                 "', 'p', now() - interval '8 days')");
    exec(db, "INSERT INTO inbox (consumer, event_id, processed_at) VALUES ('daily_totals_v1', 'e" + std::to_string(i) +
                 "', now() - interval '8 days')");
  }
  for (int i = 0; i < 4; ++i) run_row(db, "p", "succeeded", "2024-01-0" + std::to_string(i + 1) + "T10:00:00Z", "100 days", {3, 4});
  run_row(db, "p", "succeeded", "2024-02-01T10:00:00Z", "1 day", {1});  // the latest: kept
  Options options = options_with_chunk(2);
  std::map<std::string, std::vector<std::int64_t>> chunks;
  options.on_chunk = [&](std::string_view kind, std::int64_t deleted) { chunks[std::string(kind)].push_back(deleted); };
  const auto kinds = by_kind(run_retention(*db.connect(), options));
  const std::map<std::string, std::int64_t> expected = {{"outbox", 7},   {"batch_ledger", 8}, {"runs", 4},
                                                        {"quarantine", 5}, {"requests", 5},     {"inbox", 5}};
  for (const auto& [kind, total] : expected) {
    SCOPED_TRACE(kind);
    EXPECT_EQ(kinds.at(kind).deleted, total);
    ASSERT_FALSE(chunks[kind].empty());
    EXPECT_LE(*std::max_element(chunks[kind].begin(), chunks[kind].end()), 2);
    std::int64_t sum = 0;
    for (const auto rows : chunks[kind]) sum += rows;
    EXPECT_EQ(sum, total) << "every deleted row is counted once";
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox") + db.scalar("SELECT count(*) FROM quarantine") +
                db.scalar("SELECT count(*) FROM run_requests") + db.scalar("SELECT count(*) FROM inbox"),
            "0000");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM runs"), "1");
}

TEST(RetentionTest, RunsAreRolledUpIntoDailyTotalsThatEqualWhatWasDeleted) {
  TestDatabase db;
  run_row(db, "p", "succeeded", "2024-01-01T10:00:00Z", "100 days", {10, 20});
  run_row(db, "p", "failed", "2024-01-01T23:00:00Z", "100 days", {5});
  run_row(db, "p", "stopped", "2024-01-02T01:00:00Z", "100 days", {7, 8, 9});
  run_row(db, "p", "succeeded", "2024-01-03T01:00:00Z", "80 days", {1});      // inside the window
  run_row(db, "p", "running", "2024-01-03T02:00:00Z", "", {2});               // never finished: kept
  const std::string latest_p = run_row(db, "p", "succeeded", "2024-01-04T00:00:00Z", "1 day", {});
  const std::string latest_q = run_row(db, "q", "succeeded", "2024-01-01T00:00:00Z", "100 days", {4});  // q's latest
  exec(db, "INSERT INTO run_requests (request_id, run_id, pipeline, received_at) VALUES ('kept-with-its-run', " +
               latest_q + ", 'q', now())");
  const char kExpiredSums[] =
      "SELECT count(DISTINCT r.id) || '/' || count(l.id) || '/' || coalesce(sum(l.input), 0) || '/' || "
      "coalesce(sum(l.inserted), 0) || '/' || coalesce(sum(l.invalid), 0) FROM runs r LEFT JOIN batch_ledger l ON "
      "l.run_id = r.id WHERE r.finished_at < now() - interval '90 days' AND r.id <> ";
  const std::string before = db.scalar(kExpiredSums + latest_q);
  EXPECT_EQ(before, "3/6/59/53/6");

  const auto kinds = by_kind(run_retention(*db.connect(), options_with_chunk(kDefaultChunk)));
  EXPECT_EQ(kinds.at("batch_ledger").deleted, 6);
  EXPECT_EQ(kinds.at("runs").deleted, 3);
  EXPECT_EQ(db.scalar("SELECT sum(runs) || '/' || sum(batches) || '/' || sum(input) || '/' || sum(inserted) || '/' || "
                      "sum(invalid) FROM tidemark_run_daily"),
            before);
  EXPECT_EQ(db.scalar("SELECT string_agg(day || ':' || runs || ',' || succeeded || ',' || failed || ',' || stopped || "
                      "',' || batches || ',' || input, ' ' ORDER BY day) FROM tidemark_run_daily WHERE pipeline = 'p'"),
            "2024-01-01:2,1,1,0,3,35 2024-01-02:1,0,0,1,3,24");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM runs WHERE pipeline = 'p'"), "3");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM runs WHERE id = " + latest_p), "1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM batch_ledger"), "3") << "the kept runs keep their ledger";
  EXPECT_EQ(db.scalar("SELECT count(*) FROM run_requests"), "1");

  // A second pass deletes nothing more and adds nothing to the totals.
  const auto again = by_kind(run_retention(*db.connect(), options_with_chunk(kDefaultChunk)));
  EXPECT_EQ(again.at("runs").deleted + again.at("batch_ledger").deleted, 0);
  EXPECT_EQ(db.scalar("SELECT sum(runs) FROM tidemark_run_daily"), "3");
}

TEST(RetentionTest, TwoJobsAtOnceRollUpEachDeletedRunOnce) {
  TestDatabase db;
  for (int i = 0; i < 40; ++i) run_row(db, "p", "succeeded", "2024-01-01T10:00:00Z", "100 days", {2, 3});
  run_row(db, "p", "succeeded", "2024-02-01T10:00:00Z", "1 day", {});  // the latest: kept
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  const auto job = [&] {
    auto connection = db.connect();
    started.wait();
    return by_kind(run_retention(*connection, options_with_chunk(3)));
  };
  auto first = std::async(std::launch::async, job);
  auto second = std::async(std::launch::async, job);
  go.set_value();
  const auto a = first.get();
  const auto b = second.get();
  EXPECT_EQ(a.at("runs").deleted + b.at("runs").deleted, 40);
  EXPECT_EQ(a.at("batch_ledger").deleted + b.at("batch_ledger").deleted, 80);
  EXPECT_EQ(db.scalar("SELECT runs || '/' || batches || '/' || input FROM tidemark_run_daily"), "40/80/200");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM runs"), "1");
}

TEST(RetentionTest, ReleasedQuarantineRequestsAndInboxGoPastTheirWindowsOnly) {
  TestDatabase db;
  exec(db, "INSERT INTO quarantine (pipeline, source, reason, detail, raw, format, position, created_at, released_at) "
           "VALUES ('p', 's', 'invalid', 'd', 'a', 'csv', '1', now() - interval '60 days', now() - interval '31 days'), "
           "('p', 's', 'invalid', 'd', 'b', 'csv', '2', now() - interval '60 days', now() - interval '29 days'), "
           "('p', 's', 'invalid', 'd', 'c', 'csv', '3', now() - interval '60 days', NULL)");
  exec(db, "INSERT INTO run_requests (request_id, pipeline, received_at) VALUES ('old', 'p', now() - interval '8 days'), "
           "('recent', 'p', now() - interval '6 days')");
  exec(db, "INSERT INTO inbox (consumer, event_id, processed_at) VALUES ('c', 'old', now() - interval '8 days'), "
           "('c', 'recent', now() - interval '6 days')");
  const auto kinds = by_kind(run_retention(*db.connect(), options_with_chunk(kDefaultChunk)));
  EXPECT_EQ(kinds.at("quarantine").deleted, 1);
  EXPECT_EQ(db.scalar("SELECT string_agg(raw, ',' ORDER BY id) FROM quarantine"), "b,c") << "open entries stay";
  EXPECT_EQ(kinds.at("requests").deleted, 1);
  EXPECT_EQ(db.scalar("SELECT string_agg(request_id, ',') FROM run_requests"), "recent");
  EXPECT_EQ(kinds.at("inbox").deleted, 1);
  EXPECT_EQ(db.scalar("SELECT string_agg(event_id, ',') FROM inbox"), "recent");
}

TEST(RetentionTest, AnInboxWindowWithinTheRedeliveryWindowIsRefused) {
  TestDatabase db;
  exec(db, "INSERT INTO inbox (consumer, event_id, processed_at) VALUES ('c', 'old', now() - interval '8 days')");
  Options options = options_with_chunk(kDefaultChunk);
  options.windows.inbox = 1min;
  const auto kinds = by_kind(run_retention(*db.connect(), options));
  EXPECT_EQ(kinds.at("inbox").deleted, 0);
  ASSERT_EQ(kinds.at("inbox").kept.size(), 1u);
  EXPECT_THAT(kinds.at("inbox").kept[0], HasSubstr("rule 16"));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM inbox"), "1");
}

TEST(RetentionTest, DryRunCountsWhatWouldGoAndDeletesNothing) {
  TestDatabase db;
  outbox_row(db, "old", "hooks", "delivered", "8 days");
  outbox_row(db, "recent", "hooks", "delivered", "1 day");
  run_row(db, "p", "succeeded", "2024-01-01T10:00:00Z", "100 days", {3, 4});
  run_row(db, "p", "succeeded", "2024-01-02T10:00:00Z", "1 day", {1});
  exec(db, "INSERT INTO run_requests (request_id, pipeline, received_at) VALUES ('old', 'p', now() - interval '8 days')");
  Options options = options_with_chunk(kDefaultChunk);
  options.dry_run = true;
  const auto kinds = by_kind(run_retention(*db.connect(), options));
  EXPECT_EQ(kinds.at("outbox").deleted, 1);
  EXPECT_EQ(kinds.at("batch_ledger").deleted, 2);
  EXPECT_EQ(kinds.at("runs").deleted, 1);
  EXPECT_EQ(kinds.at("requests").deleted, 1);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM outbox") + db.scalar("SELECT count(*) FROM batch_ledger") +
                db.scalar("SELECT count(*) FROM runs") + db.scalar("SELECT count(*) FROM run_requests"),
            "2321");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tidemark_run_daily"), "0");
}

TEST(RetentionTest, TheRegistryOfFilesReadLosesOnlyFilesNoRunHasFoundForTheRunsWindow) {
  TestDatabase db;
  exec(db, "INSERT INTO tidemark_source_files (pipeline, source, file, bytes, device, inode, fingerprint, run_id, "
           "updated_at, seen_at) VALUES "
           "('p', '/in', 'gone.csv', 10, 1, 1, 'f', 1, now() - interval '200 days', now() - interval '91 days'), "
           "('p', '/in', 'old.csv', 10, 1, 2, 'f', 1, now() - interval '200 days', now() - interval '1 day')");
  Options dry = options_with_chunk(kDefaultChunk);
  dry.dry_run = true;
  EXPECT_EQ(by_kind(run_retention(*db.connect(), dry)).at("source_files").deleted, 1);
  EXPECT_EQ(by_kind(run_retention(*db.connect(), options_with_chunk(kDefaultChunk))).at("source_files").deleted, 1);
  // A file read long ago that runs still find stays registered, so it is not read again.
  EXPECT_EQ(db.scalar("SELECT string_agg(file, ',') FROM tidemark_source_files"), "old.csv");
}

}  // namespace
}  // namespace tidemark::app::retention
