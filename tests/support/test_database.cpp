#include "tests/support/test_database.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "pipeline/cluster/cluster.hpp"
#include "pipeline/store/migrate.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::testing {

namespace {

namespace fs = std::filesystem;

// One initdb per machine and user: a stopped cluster that every test binary's cluster
// copies (ctest runs each test in a process of its own, and initdb was most of a database
// test's start-up). Made once under an exclusive lock; "ready" is written once it is
// stopped, so a seed left half-made by a killed process is made again.
const pipeline::cluster::Cluster& seed_cluster() {
  static const pipeline::cluster::Cluster seed = [] {
    const fs::path home = fs::temp_directory_path() / ("tidemark-test-seed-v1-" + std::to_string(getuid()));
    const fs::path lock_path = home.string() + ".lock";
    const int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + lock_path.string());
    pipeline::cluster::Cluster cluster(home, /*durable=*/false);
    if (!fs::exists(home / "ready")) {
      cluster.destroy();
      cluster.start("postgres");
      cluster.stop();
      std::ofstream(home / "ready") << "stopped\n";
    }
    close(lock);
    return cluster;
  }();
  return seed;
}

// The binary's one cluster: created on first use, destroyed when the binary exits.
struct SharedCluster {
  pipeline::cluster::Cluster cluster;
  SharedCluster()
      : cluster(fs::temp_directory_path() / ("tidemark-test-" + std::to_string(getpid())), /*durable=*/false,
                &seed_cluster()) {
    cluster.start("postgres");
  }
  ~SharedCluster() { cluster.destroy(); }
};

SharedCluster& shared_cluster() {
  static SharedCluster shared;
  return shared;
}

std::atomic<int> database_counter{0};

}  // namespace

TestDatabase::TestDatabase() {
  auto& cluster = shared_cluster().cluster;
  name_ = "test_" + std::to_string(getpid()) + "_" + std::to_string(database_counter++);
  {
    pqxx::connection admin(cluster.url("postgres"));
    pqxx::nontransaction txn(admin);
    txn.exec("CREATE DATABASE " + name_);
  }
  url_ = cluster.url(name_);
  database_ = std::make_unique<pipeline::db::Database>(url_);
  auto connection = database_->connect();
  pipeline::db::migrate(*connection);
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection admin(shared_cluster().cluster.url("postgres"));
    pqxx::nontransaction txn(admin);
    txn.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception&) {
    // The cluster is removed at exit anyway; a failed drop must not fail the test.
  }
}

std::unique_ptr<pqxx::connection> TestDatabase::connect() const { return database_->connect(); }

std::string TestDatabase::scalar(const std::string& sql) const {
  pqxx::connection connection(url_);
  pqxx::nontransaction txn(connection);
  const auto result = txn.exec(sql);
  if (result.empty() || result[0][0].is_null()) return "";
  return result[0][0].c_str();
}

bool TestDatabase::await_sessions(const std::string& where, int count) const {
  const std::string query = "SELECT count(*) FROM pg_stat_activity WHERE " + where;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (scalar(query) != std::to_string(count)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void TestDatabase::crash_cluster() { shared_cluster().cluster.stop(/*immediate=*/true); }

void TestDatabase::restart_cluster() { shared_cluster().cluster.start("postgres"); }

}  // namespace tidemark::testing
