#include "pipeline/cluster/cluster.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <openssl/rand.h>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include "pipeline/core/error.hpp"
#include "pipeline/core/file_descriptor.hpp"
#include "pipeline/core/percent_encode.hpp"
#include "pipeline/core/utf8.hpp"
#include "pipeline/store/pg/database.hpp"
#include "sql/statements.hpp"

namespace tidemark::pipeline::cluster {

namespace fs = std::filesystem;

namespace {

const fs::path kPgBin = "/usr/lib/postgresql/15/bin";

// The whole client authentication file: loopback TCP only (there is no Unix socket), with
// the password of $TIDEMARK_HOME/pgpass. Rewritten at initdb; a different file means a
// cluster of an older version (trust for everyone) that start() converts.
const std::string kHba =
    "# Written by tidemark: loopback TCP only, password (scram-sha-256) from $TIDEMARK_HOME/pgpass.\n"
    "host all all 127.0.0.1/32 scram-sha-256\n";

bool running_as_root() { return geteuid() == 0; }

// The account the server runs as: postgres when we are root (PostgreSQL refuses root),
// otherwise ourselves.
struct ServerUser {
  uid_t uid;
  gid_t gid;
};

ServerUser server_user() {
  if (!running_as_root()) return {geteuid(), getegid()};
  const passwd* pg = getpwnam("postgres");
  if (pg == nullptr) throw Error(ErrorKind::kPermanent, "running as root needs a user postgres to run PostgreSQL as");
  return {pg->pw_uid, pg->pw_gid};
}

std::runtime_error file_error(const std::string& what, const fs::path& path, int error) {
  return std::runtime_error(what + " " + path.string() + ": " +
                            (error == ELOOP ? "it is a symbolic link (refused)" : std::strerror(error)));
}

// Every file we create or write is opened with O_NOFOLLOW: as root, a symbolic link planted
// in its place would otherwise redirect the write (or the fchown) to any file on the system.
int open_nofollow(const fs::path& path, int flags) {
  const int fd = open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw file_error("cannot open", path, errno);
  return fd;
}

// Writes (or appends) `text` to a regular file of mode 0600, owned by `owner` when given.
void write_private_file(const fs::path& path, const std::string& text, const ServerUser* owner = nullptr,
                        bool append = false) {
  FileDescriptor fd(open_nofollow(path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC)));
  struct stat info {};
  if (fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    throw Error(ErrorKind::kPermanent, "refusing to write " + path.string() + ": not a regular file");
  }
  if (fchmod(fd.get(), 0600) != 0) throw file_error("cannot set the mode of", path, errno);
  if (owner != nullptr && fchown(fd.get(), owner->uid, owner->gid) != 0) {
    throw file_error("cannot hand over", path, errno);
  }
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t written = write(fd.get(), text.data() + done, text.size() - done);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) throw file_error("cannot write", path, errno);
    done += static_cast<std::size_t>(written);
  }
}

// The file's text, or nullopt when it does not exist.
std::optional<std::string> read_file(const fs::path& path) {
  const int raw = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (raw < 0 && errno == ENOENT) return std::nullopt;
  if (raw < 0) throw file_error("cannot read", path, errno);
  FileDescriptor fd(raw);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(fd.get(), buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw file_error("cannot read", path, errno);
    if (got == 0) return text;
    text.append(buffer, static_cast<std::size_t>(got));
  }
}

// Runs a program (as user postgres when we are root: PostgreSQL refuses to run as root),
// with its output appended to `log`. Returns the exit status.
int run_program(std::vector<std::string> argv, const fs::path& log) {
  if (running_as_root()) argv.insert(argv.begin(), {"/usr/sbin/runuser", "-u", "postgres", "--"});
  const pid_t child = fork();
  if (child < 0) throw Error(ErrorKind::kPermanent, "fork failed while starting " + argv.front());
  if (child == 0) {
    // Opened as root before runuser: never through a symbolic link.
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
    if (out < 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
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
  std::istringstream in(read_file(log).value_or(""));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string tail;
  for (std::size_t i = lines.size() > 10 ? lines.size() - 10 : 0; i < lines.size(); ++i) tail += "\n  " + lines[i];
  return tail;
}

// Hands a folder we created to the server's user, through a descriptor (no symlink race).
void hand_folder_to_server(const fs::path& folder) {
  FileDescriptor fd(open_nofollow(folder, O_RDONLY | O_DIRECTORY));
  const ServerUser owner = server_user();
  if (fchown(fd.get(), owner.uid, owner.gid) != 0) throw file_error("cannot hand over", folder, errno);
}

// Why the server folder (data folder and log) must not be used, or "" when it may: it must
// be a real folder (lstat: not a symbolic link) owned by the server's user and open to it
// alone. Anything else may have been prepared by another local user to make us write, as
// root, where they choose.
std::string server_folder_problem(const fs::path& folder) {
  struct stat info {};
  if (lstat(folder.c_str(), &info) != 0) return std::strerror(errno);
  const mode_t mode = info.st_mode & 07777;
  const ServerUser owner = server_user();
  if (S_ISLNK(info.st_mode)) return "it is a symbolic link";
  if (!S_ISDIR(info.st_mode)) return "it is not a folder";
  if (info.st_uid != owner.uid) {
    return "it is owned by uid " + std::to_string(info.st_uid) + ", not by the server's uid " +
           std::to_string(owner.uid);
  }
  // Folders of older versions are 0755 (the umask): as nobody else could write into them,
  // they are tightened below rather than refused.
  if ((mode & 022) != 0) {
    char octal[8];
    std::snprintf(octal, sizeof(octal), "%04o", static_cast<unsigned>(mode));
    return std::string("its mode is ") + octal + ", not 0700";
  }
  return "";
}

void check_server_folder(const fs::path& folder) {
  if (const std::string problem = server_folder_problem(folder); !problem.empty()) {
    throw Error(ErrorKind::kPermanent, "refusing to use the PostgreSQL folder " + folder.string() + ": " + problem +
                                       ". Someone else may have prepared it; remove it and start again");
  }
  FileDescriptor fd(open_nofollow(folder, O_RDONLY | O_DIRECTORY));
  if (fchmod(fd.get(), 0700) != 0) throw file_error("cannot set the mode of", folder, errno);
}

// $TIDEMARK_HOME holds the password file: only we may enter it (0700). One exception: a
// cluster of an older version, run as root, may have its data folder inside the home; the
// server's user then keeps the right to pass through it (0711), never to list or read it.
void make_private_home(const fs::path& home, bool server_passes_through) {
  fs::create_directories(home.parent_path());
  if (mkdir(home.c_str(), 0700) != 0 && errno != EEXIST) throw file_error("cannot create", home, errno);
  // The home itself may be a symbolic link: the path is the user's own choice.
  const int raw = open(home.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) throw file_error("cannot open", home, errno);
  FileDescriptor fd(raw);
  struct stat info {};
  if (fstat(fd.get(), &info) != 0) throw file_error("cannot inspect", home, errno);
  if (info.st_uid != geteuid()) {
    throw Error(ErrorKind::kPermanent, "$TIDEMARK_HOME " + home.string() + " is owned by uid " +
                                           std::to_string(info.st_uid) + ", not by us (uid " +
                                           std::to_string(geteuid()) + "): use a folder of your own, or remove it");
  }
  if (fchmod(fd.get(), server_passes_through ? 0711 : 0700) != 0) throw file_error("cannot set the mode of", home, errno);
}

// A fresh random password: hex, so that it needs no quoting in SQL or in the passfile.
std::string random_password() {
  unsigned char bytes[24];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    throw Error(ErrorKind::kPermanent, "cannot draw a random password (RAND_bytes)");
  }
  std::string text;
  append_hex(text, std::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
  return text;
}

// A libpq URI query value: anything but unreserved characters and '/' percent-encoded.
std::string uri_encode(const std::string& text) {
  return percent_encode(text, [](unsigned char byte) { return is_url_unreserved(byte) || byte == '/'; });
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
  explicit HomeLock(const fs::path& home) : fd_(open_nofollow(home / "lock", O_RDWR | O_CREAT)) {
    if (fchmod(fd_.get(), 0600) != 0 || flock(fd_.get(), LOCK_EX) != 0) {
      throw Error(ErrorKind::kPermanent, "cannot lock " + (home / "lock").string());
    }
  }

 private:
  FileDescriptor fd_;
};

}  // namespace

fs::path default_home() {
  const char* home = std::getenv("TIDEMARK_HOME");
  return fs::absolute(home && *home ? fs::path(home) : fs::path(".tidemark"));
}

Cluster::Cluster(fs::path home, bool durable, const Cluster* seed)
    : home_(fs::absolute(std::move(home))), durable_(durable) {
  if (seed != nullptr) {
    if (!seed->initialized()) throw std::logic_error("seed cluster " + seed->home().string() + " is not initialised");
    seed_data_dir_ = seed->data_dir();
    seed_passfile_ = seed->passfile();
  }
  load_state();
}

void Cluster::load_state() {
  std::istringstream in(read_file(home_ / "cluster.conf").value_or(""));
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
  write_private_file(home_ / "cluster.conf", "data_dir=" + data_dir_.string() + "\nport=" + std::to_string(port_) + "\n");
}

bool Cluster::initialized() const { return !data_dir_.empty() && fs::exists(data_dir_ / "PG_VERSION"); }

bool Cluster::running() const {
  return initialized() && run_program({(kPgBin / "pg_ctl").string(), "status", "-D", data_dir_.string()}, "/dev/null") == 0;
}

// The folder that holds the data folder and the server log. Not root: home/pg. Root: the
// server runs as postgres, which cannot enter the 0700 home, so a fresh folder with an
// unpredictable name (mkdtemp: created by us, 0700, never one that already exists) in the
// system temp folder; cluster.conf records it.
void Cluster::create_data_folder() {
  fs::path folder;
  if (!running_as_root()) {
    folder = home_ / "pg";
    if (mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) throw file_error("cannot create", folder, errno);
    check_server_folder(folder);
  } else {
    std::string pattern = (fs::temp_directory_path() / "tidemark-pg-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw file_error("cannot create", pattern, errno);
    folder = pattern;
    hand_folder_to_server(folder);
  }
  data_dir_ = folder / "data";
}

void Cluster::initdb(const fs::path& init_log) {
  const ServerUser owner = server_user();
  // The password goes to our passfile first (a crash after initdb must not lose it), and
  // to initdb through a file in the server's private folder, removed at once.
  const std::string password = random_password();
  write_private_file(passfile(), "127.0.0.1:*:*:postgres:" + password + "\n");
  const fs::path password_file = data_dir_.parent_path() / "initdb.password";
  write_private_file(password_file, password + "\n", &owner);
  spdlog::info("creating the embedded PostgreSQL cluster in {}", data_dir_.string());
  std::vector<std::string> argv{(kPgBin / "initdb").string(), "-D", data_dir_.string(), "-U", "postgres",
                                "--auth-host=scram-sha-256", "--auth-local=scram-sha-256",
                                "--pwfile=" + password_file.string(), "-E", "UTF8", "--no-locale"};
  if (!durable_) argv.emplace_back("--no-sync");  // a throwaway cluster: fsync is off anyway
  const int status = run_program(std::move(argv), init_log);
  fs::remove(password_file);
  if (status != 0) {
    throw Error(ErrorKind::kPermanent, "initdb failed for " + data_dir_.string() + ":" + tail_of(init_log));
  }
  write_private_file(data_dir_ / "pg_hba.conf", kHba, &owner);
  // Our settings live in one included file, rewritten at every start (the port may change).
  write_private_file(data_dir_ / "postgresql.conf", "\ninclude_if_exists = 'tidemark.conf'\n", &owner,
                     /*append=*/true);
}

void Cluster::start(const std::string& database) {
  make_private_home(home_, running_as_root() && !data_dir_.empty() &&
                               data_dir_.string().rfind((home_ / "").string(), 0) == 0);
  HomeLock lock(home_);
  load_state();  // another process may have initialised it while we waited
  const ServerUser owner = server_user();
  // A recorded folder that is gone (say, /tmp cleaned at boot) is never recreated under
  // the same, now known, name: a new one is made below.
  struct stat info {};
  if (!data_dir_.empty() && lstat(data_dir_.parent_path().c_str(), &info) == 0) {
    check_server_folder(data_dir_.parent_path());
  } else {
    data_dir_.clear();
  }
  if (!initialized()) {
    if (data_dir_.empty()) create_data_folder();
    const fs::path parent = data_dir_.parent_path();
    fs::remove_all(data_dir_);  // a half-made one; remove_all does not follow symbolic links
    const fs::path init_log = parent / "postgresql.log";
    write_private_file(init_log, "", &owner, /*append=*/true);  // created now so that the server's user owns it
    if (!seed_data_dir_.empty()) {
      // The copy brings the seed's password (pg_authid) and its pg_hba.conf and include line.
      write_private_file(passfile(), read_file(seed_passfile_).value_or(""));
      if (run_program({"/bin/cp", "-a", seed_data_dir_.string(), data_dir_.string()}, init_log) != 0) {
        throw Error(ErrorKind::kPermanent,
                    "cannot copy the seed cluster " + seed_data_dir_.string() + ":" + tail_of(init_log));
      }
    } else {
      initdb(init_log);
    }
    port_ = 0;
    save_state();
  }
  if (!running()) {
    // A port found free may be taken before the server binds it (bind(0) hands out an
    // ephemeral port, which any outgoing connection may take meanwhile): a start that fails
    // on a taken port tries a fresh one.
    for (int attempt = 1;; ++attempt) {
      if (port_ == 0 || bind_loopback(port_) == 0) port_ = bind_loopback(0);
      if (port_ == 0) throw Error(ErrorKind::kPermanent, "cannot find a free port on 127.0.0.1");
      std::string settings = "listen_addresses = '127.0.0.1'\nport = " + std::to_string(port_) +
                             "\nunix_socket_directories = ''\nmax_connections = 200\n";
      // A test cluster trades durability for speed; it never outlives an OS crash anyway.
      if (!durable_) settings += "fsync = off\nfull_page_writes = off\n";
      write_private_file(data_dir_ / "tidemark.conf", settings, &owner);
      const fs::path server_log = data_dir_.parent_path() / "postgresql.log";
      write_private_file(server_log, "", &owner, /*append=*/true);
      if (run_program({(kPgBin / "pg_ctl").string(), "start", "-w", "-t", "60", "-D", data_dir_.string(), "-l",
                       server_log.string()},
                      server_log) == 0) {
        break;
      }
      const std::string log_tail = tail_of(server_log);
      if (attempt < 3 && log_tail.find("Address already in use") != std::string::npos) {
        port_ = 0;
        continue;
      }
      throw Error(ErrorKind::kPermanent, "PostgreSQL did not start (data folder " + data_dir_.string() +
                                         "); its log says:" + log_tail);
    }
  }
  save_state();  // also tightens a state file of an older version (0644) to 0600
  require_password_authentication();
  auto admin = db::connect(url("postgres"));
  pqxx::nontransaction txn(*admin);
  if (txn.exec_params(std::string(sql::kClusterDatabaseExists), database).empty()) {
    try {
      txn.exec("CREATE DATABASE " + txn.quote_name(database));
    } catch (const pqxx::sql_error& error) {
      if (error.sqlstate() != "42P04") throw;  // created meanwhile by another process
    }
  }
}

// Converts a running cluster of an older version (initdb --auth=trust: any local user was
// superuser) while it still trusts us: set a password, then switch to scram-sha-256.
void Cluster::require_password_authentication() {
  const fs::path hba = data_dir_ / "pg_hba.conf";
  if (read_file(hba) == kHba) return;
  spdlog::warn("the embedded cluster in {} lets any local user in without a password: setting one ({})",
               data_dir_.string(), passfile().string());
  const std::string address = "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
  const std::string password = random_password();
  write_private_file(passfile(), "127.0.0.1:*:*:postgres:" + password + "\n");
  {
    auto admin = db::connect(address);
    pqxx::nontransaction txn(*admin);
    txn.exec("ALTER ROLE postgres PASSWORD " + txn.quote(password));
    const ServerUser owner = server_user();
    write_private_file(hba, kHba, &owner);
    txn.exec(std::string(sql::kClusterReloadConfig));
  }
  // pg_reload_conf() only signals the postmaster: wait until it refuses a wrong password.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    try {
      // Not db::connect: only libpq's own refusal of the wrong password is the answer sought.
      pqxx::connection probe(address + "?password=not-the-password");
    } catch (const pqxx::broken_connection&) {
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error(ErrorKind::kPermanent, "the embedded cluster still accepts connections without its password after "
                                         "rewriting " + hba.string());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
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
    throw Error(ErrorKind::kPermanent, "pg_ctl stop failed for " + data_dir_.string() + ":" + tail_of(server_log));
  }
}

void Cluster::destroy() {
  if (initialized()) stop(true);
  std::error_code ignored;
  // Only a folder that is ours: never a tree someone else prepared (or links to).
  if (!data_dir_.empty() && server_folder_problem(data_dir_.parent_path()).empty()) {
    fs::remove_all(data_dir_.parent_path(), ignored);
  }
  fs::remove_all(home_, ignored);
  data_dir_.clear();
  port_ = 0;
}

int Cluster::port() const { return port_; }

std::string Cluster::url(const std::string& database) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + database +
         "?passfile=" + uri_encode(passfile().string());
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

}  // namespace tidemark::pipeline::cluster
