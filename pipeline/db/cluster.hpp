#pragma once
// A private PostgreSQL cluster managed with initdb/pg_ctl: the embedded default database
// (`tidemark db …`) and the throwaway clusters of the test suite.
#include <filesystem>
#include <optional>
#include <string>

namespace tidemark::pipeline::db {

class Cluster {
 public:
  // `home` holds the cluster's state file (cluster.conf); the data folder lives in
  // home/pg/ unless the server's user (postgres, when we run as root) cannot reach `home`,
  // in which case it is placed under /tmp and the state file says where.
  // `durable` = false turns fsync off: for throwaway test clusters only.
  explicit Cluster(std::filesystem::path home, bool durable = true);

  bool initialized() const;
  bool running() const;
  // initdb (once), then pg_ctl start on loopback on a free port (or the one recorded),
  // then CREATE DATABASE `database` if missing. Idempotent.
  void start(const std::string& database = "tidemark");
  void stop(bool immediate = false);
  // Stops the server and deletes the data folder and state.
  void destroy();

  int port() const;
  std::string url(const std::string& database = "tidemark") const;
  const std::filesystem::path& data_dir() const { return data_dir_; }
  std::string status_text() const;

 private:
  void load_state();
  void save_state() const;

  std::filesystem::path home_;
  std::filesystem::path data_dir_;
  bool durable_ = true;
  int port_ = 0;
};

// The embedded default: $TIDEMARK_HOME, or ./.tidemark.
std::filesystem::path default_home();

}  // namespace tidemark::pipeline::db
