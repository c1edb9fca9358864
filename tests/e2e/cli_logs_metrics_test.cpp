// Operator experience of `tidemark` as real processes: --log-format json and
// --log-level before or after the command's name, -V, `run --metrics-file` as node_exporter's
// textfile collector reads it (checked by the real promtool), the alert on the file's age
// (promtool check rules), the progress bar on a terminal (a pty: tests/support/terminal.hpp),
// and a multi-line database error on one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/terminal.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every stderr line is one JSON object with ts (UTC, Z), level and msg; returns the messages.
std::vector<std::string> json_messages(const std::string& err) {
  static const std::regex kTimestamp("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z");
  std::vector<std::string> messages;
  for (const std::string& line : lines_of(err)) {
    boost::system::error_code error;
    const boost::json::value value = boost::json::parse(line, error);
    if (error || !value.is_object()) {
      ADD_FAILURE() << "not a JSON object: " << line;
      continue;
    }
    const auto& object = value.as_object();
    EXPECT_TRUE(std::regex_match(std::string(object.at("ts").as_string()), kTimestamp)) << line;
    EXPECT_TRUE(object.at("level").is_string()) << line;
    messages.emplace_back(object.at("msg").as_string());
  }
  return messages;
}

std::string three_records() {
  return "transaction_id,source_revision,amount\n"
         "a,1,1.00\n"
         "b,1,2.00\n"
         "c,1,NaN\n";  // invalid
}

class CliLogsTest : public ::testing::TestWithParam<bool> {};

// `tidemark --log-format json run …` and `tidemark run … --log-format json` alike.
TEST_P(CliLogsTest, LogFormatJsonMakesEveryStderrLineAJsonObject) {
  TestDatabase db;
  TempDir folder;
  const auto source = folder.write("in.csv", three_records());
  std::vector<std::string> args = {"run", "--pipeline", "p", "--source", source.string(), "--database", db.url()};
  const bool before = GetParam();
  args.insert(before ? args.begin() : args.end(), {"--log-format", "json"});
  const ProcessResult result = run_tidemark(args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto messages = json_messages(result.err);
  ASSERT_FALSE(messages.empty());
  EXPECT_THAT(messages.back(), HasSubstr("done: 1 batch"));
  EXPECT_THAT(result.out, HasSubstr(": 1 batch, 3 records\n"));  // stdout is unchanged: results, not logs
}

TEST_P(CliLogsTest, LogLevelWarnDropsTheInfoLines) {
  TestDatabase db;
  TempDir folder;
  const auto source = folder.write("in.csv", three_records());
  std::vector<std::string> args = {"run", "--pipeline", "p", "--source", source.string(), "--database", db.url()};
  args.insert(GetParam() ? args.begin() : args.end(), {"--log-level", "warn"});
  const ProcessResult result = run_tidemark(args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.err, Not(HasSubstr(" info ")));
  EXPECT_EQ(result.err, "");
}

INSTANTIATE_TEST_SUITE_P(BeforeAndAfterTheCommandName, CliLogsTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Before" : "After"; });

// The config's `log:` section sets the format; --log-format on the command line wins over it.
TEST(CliLogs, ConfigLogFormatJsonAppliesAndTheFlagWins) {
  TestDatabase db;
  TempDir folder;
  const auto source = folder.write("in.csv", three_records());
  const auto config = folder.write("tidemark.yaml", "log: {format: json}\npipelines:\n  p:\n    source: {path: " +
                                                        source.string() + "}\n");
  const std::vector<std::string> args = {"run", "--pipeline", "p", "--config", config.string(), "--database", db.url()};
  const ProcessResult json = run_tidemark(args);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto messages = json_messages(json.err);
  ASSERT_FALSE(messages.empty());
  EXPECT_THAT(messages.back(), HasSubstr("done: 1 batch"));

  std::vector<std::string> text_args = args;
  text_args.insert(text_args.end(), {"--log-format", "text"});
  const ProcessResult text = run_tidemark(text_args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  ASSERT_FALSE(text.err.empty());
  for (const std::string& line : lines_of(text.err)) EXPECT_NE(line.front(), '{') << line;
  EXPECT_THAT(text.err, HasSubstr(" info "));
}

TEST(CliLogs, JsonErrorLinesOfANestedCommandParse) {
  ProcessOptions options;
  options.env["TIDEMARK_HOME"] = (std::filesystem::temp_directory_path() / "tidemark-no-such-home").string();
  const ProcessResult result = run_tidemark({"quarantine", "list", "--log-format", "json"}, options);
  EXPECT_EQ(result.exit_code, 2);
  const auto messages = json_messages(result.err);
  ASSERT_EQ(messages.size(), 1u) << result.err;
  EXPECT_THAT(messages[0], HasSubstr("tidemark db start"));
}

// libpq's errors have several lines (a refused connection adds "Is the server running …?");
// each log line holds one message all the same, and the retries of one outage are one
// warning (docs/operations.md "Logs").
TEST(CliLogs, AMultiLineDatabaseErrorIsOneLineAndItsRetriesOneWarning) {
  const std::string url = "postgresql://postgres@127.0.0.1:" + std::to_string(free_port()) + "/nowhere";
  const ProcessResult result = run_tidemark({"migrate", "--database", url});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  static const std::regex kLine("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{12}Z [a-z]+ .*[^ \t]");
  const auto lines = lines_of(result.err);
  for (const std::string& line : lines) EXPECT_TRUE(std::regex_match(line, kLine)) << "[" << line << "]";
  ASSERT_FALSE(lines.empty());
  EXPECT_THAT(lines.back(), HasSubstr("Connection refused | Is the server running on that host"));
  int warnings = 0;
  for (const std::string& line : lines) warnings += line.find("transient database error") != std::string::npos;
  EXPECT_EQ(warnings, 1) << result.err;
}

TEST(CliLogs, AnUnknownLogLevelIsAUsageErrorNamingTheChoices) {
  const ProcessResult result = run_tidemark({"--log-level", "loud", "db", "status"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("--log-level"));
  EXPECT_THAT(result.err, HasSubstr("trace,debug,info,warn,error"));
}

TEST(CliLogs, EveryCommandsHelpNamesTheLogOptions) {
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"run"}, {"quarantine", "list"}, {"serve"}, {"db", "status"}}) {
    std::vector<std::string> args = command;
    args.push_back("--help");
    const ProcessResult help = run_tidemark(args);
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_THAT(help.out, HasSubstr("--log-level LEVEL and --log-format text|json")) << command[0];
  }
}

TEST(CliVersion, DashCapitalVPrintsTheVersionAsVersionDoes) {
  const ProcessResult short_flag = run_tidemark({"-V"});
  const ProcessResult long_flag = run_tidemark({"--version"});
  EXPECT_EQ(short_flag.exit_code, 0);
  EXPECT_EQ(long_flag.exit_code, 0);
  EXPECT_THAT(short_flag.out, ::testing::MatchesRegex("tidemark [0-9]+\\.[0-9]+\\.[0-9]+\n"));
  EXPECT_EQ(short_flag.out, long_flag.out);
}

// `promtool check metrics` on `file`: its exit code and what it said (it reads stdin).
ProcessResult promtool_check(const std::string& promtool, const std::filesystem::path& file) {
  return run_process("/bin/sh", {"-c", "\"$0\" check metrics < \"$1\"", promtool, file.string()});
}

TEST(CliMetricsFile, ARunWritesItsCountsForTheTextfileCollectorAndAFailedRunKeepsTheLastSuccess) {
  TestDatabase db;
  TempDir folder;
  const auto source = folder.write("in.csv", three_records());
  const auto metrics = folder.path() / "tidemark.prom";
  const ProcessResult ok = run_tidemark({"run", "--pipeline", "p", "--source", source.string(), "--database",
                                         db.url(), "--metrics-file", metrics.string()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const std::string text = read_text(metrics);
  EXPECT_THAT(text, HasSubstr("tidemark_run_records{pipeline=\"p\",outcome=\"inserted\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_records{pipeline=\"p\",outcome=\"invalid\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_batches{pipeline=\"p\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_exit_code{pipeline=\"p\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("tidemark_run_duration_seconds{pipeline=\"p\"} "));
  const std::regex success("tidemark_run_last_success_timestamp_seconds\\{pipeline=\"p\"\\} ([0-9.]+)\n");
  std::smatch first;
  ASSERT_TRUE(std::regex_search(text, first, success)) << text;
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(folder.path()), {}), 2)
      << "only in.csv and tidemark.prom: no temporary file left behind";

  const std::string promtool = find_program("promtool");
  if (!promtool.empty()) {
    const ProcessResult check = promtool_check(promtool, metrics);
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }

  // The source is gone: the run fails, the file says so and keeps the success time.
  std::filesystem::remove(source);
  const ProcessResult failed = run_tidemark({"run", "--pipeline", "p", "--source", source.string(), "--database",
                                             db.url(), "--metrics-file", metrics.string()});
  ASSERT_EQ(failed.exit_code, 1) << failed.err;
  const std::string after = read_text(metrics);
  EXPECT_THAT(after, HasSubstr("tidemark_run_exit_code{pipeline=\"p\"} 1\n"));
  EXPECT_THAT(after, HasSubstr("tidemark_run_batches{pipeline=\"p\"} 0\n"));
  std::smatch kept;
  ASSERT_TRUE(std::regex_search(after, kept, success)) << after;
  EXPECT_EQ(kept[1], first[1]);
  if (promtool.empty()) GTEST_SKIP() << "promtool is not installed (Debian package prometheus): format not checked";
  const ProcessResult check = promtool_check(promtool, metrics);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(CliMetricsFile, AConfigurationErrorIsReportedWithExitCodeTwo) {
  TempDir folder;
  const auto config = folder.write("tidemark.yaml", "pipelines:\n  p:\n    no_such_key: 1\n");
  const auto metrics = folder.path() / "tidemark.prom";
  const ProcessResult result =
      run_tidemark({"run", "--pipeline", "p", "--config", config.string(), "--metrics-file", metrics.string()});
  ASSERT_EQ(result.exit_code, 2) << result.err;
  const std::string text = read_text(metrics);
  EXPECT_THAT(text, HasSubstr("tidemark_run_exit_code{pipeline=\"p\"} 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("tidemark_run_last_success_timestamp_seconds{")));  // never succeeded
}

// docker/textfile/: the Prometheus config and alert rules for cron runs are valid, and the
// rules' own test (the staleness alert fires after an hour without success, not before) passes.
TEST(CliMetricsFile, PromtoolAcceptsTheTextfileExampleAndItsAlertFiresOnAStaleLastSuccess) {
  const std::string promtool = find_program("promtool");
  if (promtool.empty()) GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  const auto folder = std::filesystem::path(TIDEMARK_SOURCE_DIR) / "docker/textfile";
  EXPECT_THAT(read_text(folder / "alerts-cron.yml"), HasSubstr("time() - tidemark_run_last_success_timestamp_seconds"));
  const ProcessResult config = run_process(promtool, {"check", "config", (folder / "prometheus.yml").string()});
  EXPECT_EQ(config.exit_code, 0) << config.out << config.err;
  const ProcessResult rules = run_process(promtool, {"check", "rules", (folder / "alerts-cron.yml").string()});
  EXPECT_EQ(rules.exit_code, 0) << rules.out << rules.err;
  ProcessOptions in_folder;
  in_folder.working_directory = folder;
  const ProcessResult test = run_process(promtool, {"test", "rules", "alerts-cron-test.yml"}, in_folder);
  EXPECT_EQ(test.exit_code, 0) << test.out << test.err;
}

// On a terminal (a pty) a run draws a bar with the percent of bytes read;
// with stderr a file, as in the other tests, there is none: plain log lines only.
TEST(CliProgress, ARunOnATerminalDrawsAProgressBarAndAPipedRunDoesNot) {
  const std::string missing = pseudo_terminal_missing();
  if (!missing.empty()) GTEST_SKIP() << missing;
  TestDatabase db;
  TempDir folder;
  std::string records = "transaction_id,source_revision,amount\n";
  for (int i = 0; i < 2000; ++i) records += "tx-" + std::to_string(i) + ",1,1.00\n";
  const auto source = folder.write("in.csv", records);
  const std::string command = std::string(TIDEMARK_BINARY) + " run --pipeline p --batch-size 500 --source '" +
                              source.string() + "' --database '" + db.url() + "'";
  ProcessOptions options;
  options.env["TERM"] = "xterm";
  const ProcessResult terminal = run_on_terminal(command, options);
  ASSERT_EQ(terminal.exit_code, 0) << terminal.out << terminal.err;
  EXPECT_THAT(terminal.out, ::testing::ContainsRegex("\\[[#-]{24}\\] +[0-9]+%  "));
  EXPECT_THAT(terminal.out, HasSubstr("\r\x1b[K"));
  EXPECT_THAT(terminal.out, HasSubstr("done: 4 batches"));

  const ProcessResult piped =
      run_tidemark({"run", "--pipeline", "p", "--replay", "--source", source.string(), "--database", db.url()});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_THAT(piped.err, Not(HasSubstr("\x1b[K")));
  EXPECT_THAT(piped.err, Not(HasSubstr("%  ")));
}

}  // namespace
}  // namespace tidemark::testing
