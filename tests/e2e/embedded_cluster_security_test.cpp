// The embedded cluster against other local users (docs/operations.md "Security"): the
// attacks it is built against, replayed with the real binary. Another uid (nobody)
// must not get into the server nor read its password, and a folder or a symbolic link that
// someone else planted where the cluster puts its files must be refused, its target
// untouched. The server runs as user postgres when we are root, as the test suite runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <pqxx/pqxx>

#include "pipeline/cluster/cluster.hpp"
#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"

namespace tidemark {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::ProcessOptions;
using testing::ProcessResult;
using testing::run_process;
using testing::run_tidemark;
using testing::TempDir;

constexpr uid_t kNobody = 65534;

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

mode_t mode_of(const fs::path& path) {
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) return 0;
  return info.st_mode & 07777;
}

uid_t owner_of(const fs::path& path) {
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0) return static_cast<uid_t>(-1);
  return info.st_uid;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `program args…` as user nobody, without any password from our environment.
ProcessResult as_nobody(const std::vector<std::string>& command) {
  std::vector<std::string> args{"-u", "nobody", "--"};
  args.insert(args.end(), command.begin(), command.end());
  ProcessOptions options;
  options.env["PGPASSWORD"] = std::nullopt;
  options.env["PGPASSFILE"] = std::nullopt;
  options.env["HOME"] = "/nonexistent";
  return run_process("/usr/sbin/runuser", args, options);
}

ProcessResult psql(const std::string& url, bool as_other_user = false) {
  const std::vector<std::string> command{"/usr/bin/psql", "-X", "-w", "-At", "-d", url, "-c", "SELECT 1 + 1"};
  if (as_other_user) return as_nobody(command);
  std::vector<std::string> args(command.begin() + 1, command.end());
  ProcessOptions options;
  options.env["PGPASSWORD"] = std::nullopt;
  options.env["PGPASSFILE"] = std::nullopt;
  return run_process(command.front(), args, options);
}

// An embedded cluster home, removed with its data folder (wherever it was placed) at the end.
class Home {
 public:
  explicit Home(const fs::path& path) : path_(path) { options_.env["TIDEMARK_HOME"] = path_.string(); }
  ~Home() {
    try {
      pipeline::cluster::Cluster(path_).destroy();
    } catch (const std::exception&) {
    }
  }
  Home(const Home&) = delete;
  Home& operator=(const Home&) = delete;

  const fs::path& path() const { return path_; }
  ProcessResult tidemark(const std::vector<std::string>& args) const { return run_tidemark(args, options_); }
  pipeline::cluster::Cluster cluster() const { return pipeline::cluster::Cluster(path_); }

 private:
  fs::path path_;
  ProcessOptions options_;
};

void require_root_and_nobody() {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (runuser to user nobody; the server runs as postgres)";
}

// The address any local user could try: the cluster's port, user postgres, no password.
std::string bare_address(const pipeline::cluster::Cluster& cluster) {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(cluster.port()) + "/postgres";
}

TEST(EmbeddedClusterSecurity, AnotherUidIsRefusedAndCannotReadThePassword) {
  require_root_and_nobody();
  TempDir parent;  // 0755: nobody can reach the home, so the home's own mode must stop it
  Home home(parent.path() / "home");
  const ProcessResult start = home.tidemark({"db", "start"});
  ASSERT_EQ(start.exit_code, 0) << start.err;
  const ProcessResult url = home.tidemark({"db", "url"});
  ASSERT_EQ(url.exit_code, 0) << url.err;
  const std::string address = trimmed(url.out);
  const auto cluster = home.cluster();
  EXPECT_THAT(address, HasSubstr("passfile=" + cluster.passfile().string()));

  // The invoking user: psql "$(tidemark db url)" works with the passfile alone.
  const ProcessResult ours = psql(address);
  EXPECT_EQ(ours.exit_code, 0) << ours.err;
  EXPECT_EQ(trimmed(ours.out), "2");

  // Another uid: no password, no way in, whether it tries the bare address or the URL.
  for (const std::string& attempt : {bare_address(cluster), address}) {
    const ProcessResult theirs = psql(attempt, /*as_other_user=*/true);
    EXPECT_NE(theirs.exit_code, 0) << "user nobody got in with " << attempt << ": " << theirs.out;
    EXPECT_THAT(theirs.err, HasSubstr("password")) << "refused by authentication, not by chance";
  }
  const ProcessResult read = as_nobody({"/usr/bin/cat", cluster.passfile().string()});
  EXPECT_NE(read.exit_code, 0) << "user nobody read the password: " << read.out;

  // The home and its files are the invoking user's alone.
  EXPECT_EQ(mode_of(home.path()), 0700u);
  for (const char* file : {"pgpass", "cluster.conf", "lock"}) {
    EXPECT_EQ(mode_of(home.path() / file), 0600u) << file;
    EXPECT_EQ(owner_of(home.path() / file), geteuid()) << file;
  }
  EXPECT_EQ(mode_of(cluster.data_dir().parent_path()), 0700u);
  EXPECT_EQ(mode_of(cluster.data_dir().parent_path() / "postgresql.log"), 0600u);
}

TEST(EmbeddedClusterSecurity, TrustClusterOfAnOlderVersionIsConvertedOnItsNextStart) {
  require_root_and_nobody();
  TempDir parent;
  Home home(parent.path() / "home");
  ASSERT_EQ(home.tidemark({"db", "start"}).exit_code, 0);
  const auto cluster = home.cluster();
  {
    pqxx::connection connection(cluster.url());
    pqxx::nontransaction(connection).exec("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)");
  }
  // What older versions left: trust for every local user, no password file.
  const fs::path hba = cluster.data_dir() / "pg_hba.conf";
  std::ofstream(hba, std::ios::trunc) << "host all all 127.0.0.1/32 trust\n";
  fs::remove(cluster.passfile());
  ASSERT_EQ(home.tidemark({"db", "stop"}).exit_code, 0);
  const ProcessResult restart = home.tidemark({"db", "start"});
  ASSERT_EQ(restart.exit_code, 0) << restart.err;
  EXPECT_THAT(restart.err, HasSubstr("without a password"));

  const ProcessResult theirs = psql(bare_address(cluster), /*as_other_user=*/true);
  EXPECT_NE(theirs.exit_code, 0) << "user nobody still gets in after the conversion: " << theirs.out;
  EXPECT_THAT(theirs.err, HasSubstr("password"));
  EXPECT_EQ(mode_of(cluster.passfile()), 0600u);
  const ProcessResult url = home.tidemark({"db", "url"});
  ASSERT_EQ(url.exit_code, 0) << url.err;
  pqxx::connection connection(trimmed(url.out));
  EXPECT_EQ(pqxx::nontransaction(connection).exec("SELECT n FROM kept")[0][0].as<int>(), 7) << "data kept";
}

// As root with a home that postgres cannot reach, older versions put the data folder at
// <temp>/tidemark-pg-<std::hash(home)> and used it even when someone else had made it.
TEST(EmbeddedClusterSecurity, PrePlantedTempFolderIsNeverUsed) {
  require_root_and_nobody();
  TempDir parent;
  fs::permissions(parent.path(), fs::perms::owner_all);  // 0700: postgres cannot reach the home
  const fs::path target = parent.write("root-only-file", "secret\n");
  fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write);
  Home home(parent.path() / "home");

  const fs::path planted =
      fs::temp_directory_path() / ("tidemark-pg-" + std::to_string(std::hash<std::string>{}(home.path().string())));
  fs::remove_all(planted);
  fs::create_directories(planted);
  fs::permissions(planted, fs::perms::all);
  fs::create_symlink(target, planted / "postgresql.log");
  ASSERT_EQ(chown(planted.c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(lchown((planted / "postgresql.log").c_str(), kNobody, kNobody), 0);

  const ProcessResult start = home.tidemark({"db", "start"});
  EXPECT_EQ(start.exit_code, 0) << start.err;
  EXPECT_EQ(read_text(target), "secret\n") << "the planted link was written through";
  EXPECT_EQ(owner_of(target), 0u) << "the planted link was chowned through";
  const fs::path used = home.cluster().data_dir().parent_path();
  EXPECT_NE(used, planted);
  EXPECT_EQ(mode_of(used), 0700u);
  EXPECT_NE(owner_of(used), kNobody);
  fs::remove_all(planted);
}

// A recorded folder that is no longer ours (a temp folder cleaned at boot and made again by
// someone else) is refused, and nothing in it is written or chowned.
TEST(EmbeddedClusterSecurity, RecordedFolderOwnedBySomeoneElseIsRefused) {
  require_root_and_nobody();
  TempDir parent;
  const fs::path target = parent.write("root-only-file", "secret\n");
  fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write);
  TempDir planted;
  fs::create_symlink(target, planted.path() / "postgresql.log");
  ASSERT_EQ(chown(planted.path().c_str(), kNobody, kNobody), 0);
  fs::permissions(planted.path(), fs::perms::owner_all);  // 0700, but nobody's
  Home home(parent.path() / "home");
  fs::create_directories(home.path());
  std::ofstream(home.path() / "cluster.conf") << "data_dir=" << (planted.path() / "data").string() << "\nport=0\n";

  const ProcessResult start = home.tidemark({"db", "start"});
  EXPECT_EQ(start.exit_code, 1) << start.err;
  EXPECT_THAT(start.err, HasSubstr("refusing to use the PostgreSQL folder " + planted.path().string()));
  EXPECT_THAT(start.err, HasSubstr("owned by uid 65534"));
  EXPECT_EQ(read_text(target), "secret\n");
  EXPECT_EQ(owner_of(target), 0u);
  EXPECT_FALSE(fs::exists(planted.path() / "data"));
}

// Inside the server's own folder, the log is never opened through a symbolic link (the
// server's account could plant one to make root write where it likes).
TEST(EmbeddedClusterSecurity, SymlinkedServerLogIsRefused) {
  require_root_and_nobody();
  TempDir parent;
  const fs::path target = parent.write("root-only-file", "secret\n");
  fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write);
  Home home(parent.path() / "home");
  ASSERT_EQ(home.tidemark({"db", "start"}).exit_code, 0);
  ASSERT_EQ(home.tidemark({"db", "stop"}).exit_code, 0);
  const fs::path log = home.cluster().data_dir().parent_path() / "postgresql.log";
  fs::remove(log);
  fs::create_symlink(target, log);

  const ProcessResult start = home.tidemark({"db", "start"});
  EXPECT_EQ(start.exit_code, 1) << start.err;
  EXPECT_THAT(start.err, HasSubstr("symbolic link"));
  EXPECT_EQ(read_text(target), "secret\n");
  EXPECT_EQ(owner_of(target), 0u);
}

}  // namespace
}  // namespace tidemark
