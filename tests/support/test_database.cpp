#include "tests/support/test_database.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "pipeline/store/cluster.hpp"
#include "pipeline/store/migrate.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::testing {

namespace {

// The binary's one cluster: created on first use, destroyed when the binary exits.
struct SharedCluster {
  pipeline::db::Cluster cluster;
  SharedCluster()
      : cluster(std::filesystem::temp_directory_path() / ("tidemark-test-" + std::to_string(getpid())),
                /*durable=*/false) {
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
  auto connection = pipeline::db::connect(url_);
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

std::unique_ptr<pqxx::connection> TestDatabase::connect() const { return pipeline::db::connect(url_); }

std::string TestDatabase::scalar(const std::string& sql) const {
  pqxx::connection connection(url_);
  pqxx::nontransaction txn(connection);
  const auto result = txn.exec(sql);
  if (result.empty() || result[0][0].is_null()) return "";
  return result[0][0].c_str();
}

void TestDatabase::crash_cluster() { shared_cluster().cluster.stop(/*immediate=*/true); }

void TestDatabase::restart_cluster() { shared_cluster().cluster.start("postgres"); }

}  // namespace tidemark::testing
