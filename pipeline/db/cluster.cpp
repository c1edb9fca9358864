#include "pipeline/db/cluster.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

namespace tidemark::pipeline::db {

namespace fs = std::filesystem;

namespace {

const fs::path kPgBin = "/usr/lib/postgresql/15/bin";

bool running_as_root() { return geteuid() == 0; }

// Runs a program (as user postgres when we are root: PostgreSQL refuses to run as root),
// with its output appended to `log`. Returns the exit status.
int run_program(std::vector<std::string> argv, const fs::path& log) {
  if (running_as_root()) argv.insert(argv.begin(), {"/usr/sbin/runuser", "-u", "postgres", "--"});
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed while starting " + argv.front());
  if (child == 0) {
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) {
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
    }
    const int in = open("/dev/null", O_RDONLY);
    if (in >= 0) dup2(in, STDIN_FILENO);
    std::vector<char*> args;
    for (auto& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    execv(args.front(), args.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string tail_of(const fs::path& log) {
  std::ifstream in(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string tail;
  for (std::size_t i = lines.size() > 10 ? lines.size() - 10 : 0; i < lines.size(); ++i) tail += "\n  " + lines[i];
  return tail;
}

void give_to_postgres(const fs::path& path) {
  if (!running_as_root()) return;
  if (const passwd* pg = getpwnam("postgres")) {
    if (chown(path.c_str(), pg->pw_uid, pg->pw_gid) != 0) {
      throw std::runtime_error("cannot hand " + path.string() + " to user postgres");
    }
  }
}

// Whether user postgres can reach (search) `folder`: /root is 0700, so a checkout under
// it cannot hold a data folder that the server may use.
bool reachable_by_postgres(const fs::path& folder) {
  if (!running_as_root()) return true;
  return run_program({"/usr/bin/test", "-x", folder.string()}, "/dev/null") == 0;
}

// Binds a throwaway socket to 127.0.0.1:`port` (0: any free port) and returns the port it
// got, or 0 when the port is taken. SO_REUSEADDR as PostgreSQL's own listener has: after a
// stop, connections in TIME_WAIT must not make the cluster's port look taken (it would then
// restart on another port, and every URL handed out would go stale).
int bind_loopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  const int reuse = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t length = sizeof(address);
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  close(fd);
  return bound ? ntohs(address.sin_port) : 0;
}

// Serializes start/stop of one home across processes (two commands starting at once).
class HomeLock {
 public:
  explicit HomeLock(const fs::path& home) : fd_(open((home / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0 || flock(fd_, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + (home / "lock").string());
  }
  ~HomeLock() { close(fd_); }
  HomeLock(const HomeLock&) = delete;
  HomeLock& operator=(const HomeLock&) = delete;

 private:
  int fd_;
};

}  // namespace

fs::path default_home() {
  const char* home = std::getenv("TIDEMARK_HOME");
  return fs::absolute(home && *home ? fs::path(home) : fs::path(".tidemark"));
}

Cluster::Cluster(fs::path home, bool durable) : home_(fs::absolute(std::move(home))), durable_(durable) {
  load_state();
}

void Cluster::load_state() {
  std::ifstream in(home_ / "cluster.conf");
  for (std::string line; std::getline(in, line);) {
    const auto equals = line.find('=');
    if (equals == std::string::npos) continue;
    const std::string key = line.substr(0, equals);
    const std::string value = line.substr(equals + 1);
    if (key == "data_dir") data_dir_ = value;
    if (key == "port") port_ = std::stoi(value);
  }
}

void Cluster::save_state() const {
  std::ofstream out(home_ / "cluster.conf", std::ios::trunc);
  out << "data_dir=" << data_dir_.string() << "\nport=" << port_ << "\n";
}

bool Cluster::initialized() const { return !data_dir_.empty() && fs::exists(data_dir_ / "PG_VERSION"); }

bool Cluster::running() const {
  return initialized() && run_program({(kPgBin / "pg_ctl").string(), "status", "-D", data_dir_.string()}, "/dev/null") == 0;
}

void Cluster::start(const std::string& database) {
  fs::create_directories(home_);
  HomeLock lock(home_);
  load_state();  // another process may have initialised it while we waited
  if (!initialized()) {
    if (data_dir_.empty()) {
      const fs::path base =
          reachable_by_postgres(home_)
              ? home_ / "pg"
              : fs::path("/tmp") / ("tidemark-pg-" + std::to_string(std::hash<std::string>{}(home_.string())));
      data_dir_ = base / "data";
    }
    const fs::path parent = data_dir_.parent_path();
    fs::create_directories(parent);
    give_to_postgres(parent);
    fs::remove_all(data_dir_);
    const fs::path init_log = parent / "postgresql.log";
    std::ofstream{init_log, std::ios::app};  // created now so that the server's user owns it
    give_to_postgres(init_log);
    spdlog::info("creating the embedded PostgreSQL cluster in {}", data_dir_.string());
    if (run_program({(kPgBin / "initdb").string(), "-D", data_dir_.string(), "-U", "postgres", "--auth=trust",
                     "-E", "UTF8", "--no-locale"},
                    init_log) != 0) {
      throw std::runtime_error("initdb failed for " + data_dir_.string() + ":" + tail_of(init_log));
    }
    // Our settings live in one included file, rewritten at every start (the port may change).
    std::ofstream(data_dir_ / "postgresql.conf", std::ios::app) << "\ninclude_if_exists = 'tidemark.conf'\n";
    port_ = 0;
    save_state();
  }
  if (!running()) {
    if (port_ == 0 || bind_loopback(port_) == 0) port_ = bind_loopback(0);
    if (port_ == 0) throw std::runtime_error("cannot find a free port on 127.0.0.1");
    const fs::path settings = data_dir_ / "tidemark.conf";
    {
      std::ofstream out(settings, std::ios::trunc);
      out << "listen_addresses = '127.0.0.1'\nport = " << port_ << "\nunix_socket_directories = ''\n"
          << "max_connections = 200\n";
      // A test cluster trades durability for speed; it never outlives an OS crash anyway.
      if (!durable_) out << "fsync = off\nfull_page_writes = off\n";
    }
    give_to_postgres(settings);
    const fs::path server_log = data_dir_.parent_path() / "postgresql.log";
    if (run_program({(kPgBin / "pg_ctl").string(), "start", "-w", "-t", "60", "-D", data_dir_.string(), "-l",
                     server_log.string()},
                    server_log) != 0) {
      throw std::runtime_error("PostgreSQL did not start (data folder " + data_dir_.string() +
                               "); its log says:" + tail_of(server_log));
    }
    save_state();
  }
  pqxx::connection admin(url("postgres"));
  pqxx::nontransaction txn(admin);
  if (txn.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", database).empty()) {
    try {
      txn.exec("CREATE DATABASE " + txn.quote_name(database));
    } catch (const pqxx::sql_error& error) {
      if (error.sqlstate() != "42P04") throw;  // created meanwhile by another process
    }
  }
}

void Cluster::stop(bool immediate) {
  if (!initialized()) return;
  HomeLock lock(home_);
  if (!running()) return;
  const fs::path server_log = data_dir_.parent_path() / "postgresql.log";
  if (run_program({(kPgBin / "pg_ctl").string(), "stop", "-w", "-D", data_dir_.string(), "-m",
                   immediate ? "immediate" : "fast"},
                  server_log) != 0) {
    throw std::runtime_error("pg_ctl stop failed for " + data_dir_.string() + ":" + tail_of(server_log));
  }
}

void Cluster::destroy() {
  if (initialized()) stop(true);
  std::error_code ignored;
  if (!data_dir_.empty()) fs::remove_all(data_dir_.parent_path(), ignored);
  fs::remove_all(home_, ignored);
  data_dir_.clear();
  port_ = 0;
}

int Cluster::port() const { return port_; }

std::string Cluster::url(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database;
}

std::string Cluster::status_text() const {
  std::ostringstream out;
  if (!initialized()) {
    out << "not created (home " << home_.string() << "); `tidemark db start` creates it";
  } else if (running()) {
    out << "running on 127.0.0.1:" << port_ << ", data " << data_dir_.string();
  } else {
    out << "stopped, data " << data_dir_.string();
  }
  return out.str();
}

}  // namespace tidemark::pipeline::db
