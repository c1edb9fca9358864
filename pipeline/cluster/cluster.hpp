#pragma once
// A private PostgreSQL cluster managed with initdb/pg_ctl: the embedded default database
// (`tidemark db …`) and the throwaway clusters of the test suite.
//
// Security (docs/operations.md "Security"): the server listens on 127.0.0.1 only, with
// scram-sha-256 authentication; its random password is in `home`/pgpass (mode 0600), which
// the URL names as libpq's passfile. `home` is 0700 and every file in it 0600. The data
// folder is created by us (mkdtemp in the temp folder when the server's user cannot reach
// `home`) and, when reused, refused unless it is a real folder owned by the server's user
// with mode 0700; files are opened with O_NOFOLLOW and handed over with fchown.
#include <filesystem>
#include <optional>
#include <string>

namespace tidemark::pipeline::cluster {

class Cluster {
 public:
  // `home` holds the cluster's state file (cluster.conf) and password file (pgpass); the
  // data folder lives in home/pg/ unless the server's user (postgres, when we run as root)
  // cannot reach `home`, in which case it is a fresh mkdtemp folder in the system temp
  // folder and the state file says where.
  // `durable` = false turns fsync off: for throwaway test clusters only. `seed`, when given,
  // is a stopped cluster whose data folder (and so its password) a new cluster copies instead
  // of running initdb: the test suite initialises one per machine, because initdb is most of
  // a throwaway cluster's start-up.
  explicit Cluster(std::filesystem::path home, bool durable = true, const Cluster* seed = nullptr);

  bool initialized() const;
  bool running() const;
  // initdb (once), then pg_ctl start on loopback on a free port (or the one recorded),
  // then CREATE DATABASE `database` if missing. Idempotent. A cluster created by an older
  // version with trust authentication gets a password and scram-sha-256 here.
  void start(const std::string& database = "tidemark");
  void stop(bool immediate = false);
  // Stops the server and deletes the data folder and state.
  void destroy();

  int port() const;
  // postgresql://postgres@127.0.0.1:PORT/DATABASE?passfile=HOME/pgpass
  std::string url(const std::string& database = "tidemark") const;
  const std::filesystem::path& data_dir() const { return data_dir_; }
  std::filesystem::path passfile() const { return home_ / "pgpass"; }
  const std::filesystem::path& home() const { return home_; }
  std::string status_text() const;

 private:
  void load_state();
  void save_state() const;
  void create_data_folder();
  // initdb into data_dir_ with a new random password, then our pg_hba.conf and include line.
  void initdb(const std::filesystem::path& init_log);
  void require_password_authentication();

  std::filesystem::path home_;
  std::filesystem::path data_dir_;
  bool durable_ = true;
  std::filesystem::path seed_data_dir_;  // empty: initdb
  std::filesystem::path seed_passfile_;
  int port_ = 0;
};

// The embedded default: $TIDEMARK_HOME, or ./.tidemark.
std::filesystem::path default_home();

}  // namespace tidemark::pipeline::cluster
