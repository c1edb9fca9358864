// The JSON log lines (docs/cli.md "Logs"): one object per line with ts, level and msg, which
// parses whatever the message quotes: quotes, backslashes, control characters, bytes that
// are not UTF-8; a message of several lines (libpq's errors) on one line in both formats.
// Pure: the formatter is given log records, no logger.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include <boost/json.hpp>
#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>

#include "app/cli/logging.hpp"

namespace tidemark::app {
namespace {

using namespace std::chrono_literals;

std::string format_line(spdlog::level::level_enum level, std::string_view text,
                        spdlog::log_clock::time_point time = spdlog::log_clock::now()) {
  const spdlog::details::log_msg message(time, spdlog::source_loc{}, "tidemark", level,
                                         spdlog::string_view_t(text.data(), text.size()));
  JsonLogFormatter formatter;
  spdlog::memory_buf_t buffer;
  formatter.format(message, buffer);
  return std::string(buffer.data(), buffer.size());
}

boost::json::object parse_line(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line per message: " << line;
  boost::system::error_code error;
  boost::json::value value = boost::json::parse(line, error);
  EXPECT_FALSE(error) << "not JSON: " << line;
  return error ? boost::json::object{} : value.as_object();
}

TEST(JsonLogFormatterTest, ALineIsOneObjectWithTsLevelAndMsgInUtc) {
  // 2026-12-01T06:00:00.123Z
  const auto time = spdlog::log_clock::time_point(1796104800s + 123ms);
  const std::string line = format_line(spdlog::level::info, "pipeline p batch 1: input 3", time);
  EXPECT_EQ(line, "{\"ts\":\"2026-12-01T06:00:00.123Z\",\"level\":\"info\",\"msg\":\"pipeline p batch 1: input 3\"}\n");
  const auto object = parse_line(line);
  EXPECT_EQ(object.size(), 3u);
}

TEST(JsonLogFormatterTest, LevelsAreNamedAsLogLevelNamesThem) {
  EXPECT_EQ(parse_line(format_line(spdlog::level::warn, "w")).at("level").as_string(), "warn");
  EXPECT_EQ(parse_line(format_line(spdlog::level::err, "e")).at("level").as_string(), "error");
  EXPECT_EQ(parse_line(format_line(spdlog::level::debug, "d")).at("level").as_string(), "debug");
  EXPECT_EQ(parse_line(format_line(spdlog::level::trace, "t")).at("level").as_string(), "trace");
}

TEST(JsonLogFormatterTest, QuotesBackslashesAndControlCharactersAreEscapedAndRoundTrip) {
  const std::string message = std::string("file \"C:\\in.csv\"\nline 2\tcol\r\x01\x1f\x7f end ") + '\0' + " nul";
  const std::string line = format_line(spdlog::level::err, message);
  EXPECT_EQ(parse_line(line).at("msg").as_string(), message);
  EXPECT_NE(line.find(R"(\"C:\\in.csv\"\nline 2\tcol\r\u0001\u001f\u007f end \u0000 nul)"), std::string::npos)
      << line;
}

TEST(JsonLogFormatterTest, ValidUtf8IsKeptAndEachInvalidByteBecomesAReplacementCharacter) {
  const std::string valid = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";  // café € 😀
  EXPECT_EQ(parse_line(format_line(spdlog::level::info, valid)).at("msg").as_string(), valid);
  // A lone continuation byte, a truncated sequence, an overlong NUL, a surrogate.
  const std::string invalid = "a\x80z \xE2\x82 \xC0\x80 \xED\xA0\x80.";
  const std::string line = format_line(spdlog::level::info, invalid);
  const std::string expected = "a\\ufffdz \\ufffd\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd.";
  EXPECT_NE(line.find("\"msg\":\"" + expected + "\""), std::string::npos) << line;
  const std::string decoded(parse_line(line).at("msg").as_string());
  EXPECT_EQ(decoded, "a\xEF\xBF\xBDz \xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD "
                     "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD.");
}

// As libpq words them (a statement's error with its caret; a connection that failed at two
// addresses), with the trailing newline libpq ends them with.
constexpr std::string_view kStatementError =
    "ERROR:  relation \"shipments\" does not exist\nLINE 1: SELECT * FROM shipments\n                      ^\n";
constexpr std::string_view kConnectionError =
    "connection to server at \"127.0.0.1\", port 5432 failed: Connection refused\n"
    "\tIs the server running on that host and accepting TCP/IP connections?\n"
    "connection to server at \"::1\", port 5432 failed: Connection refused\n";

TEST(OneLineTest, LibpqErrorsBecomeOneLineJoinedWithBars) {
  EXPECT_EQ(one_line(kStatementError),
            "ERROR:  relation \"shipments\" does not exist | LINE 1: SELECT * FROM shipments | ^");
  EXPECT_EQ(one_line(kConnectionError),
            "connection to server at \"127.0.0.1\", port 5432 failed: Connection refused | Is the server running on "
            "that host and accepting TCP/IP connections? | connection to server at \"::1\", port 5432 failed: "
            "Connection refused");
}

TEST(OneLineTest, TrailingNewlinesCarriageReturnsAndEmptyLinesGo) {
  EXPECT_EQ(one_line("run failed: no answer\n"), "run failed: no answer");
  EXPECT_EQ(one_line("first\r\n\r\n\n  second  \r\n"), "first | second");
  EXPECT_EQ(one_line("  indented: kept"), "  indented: kept");
  EXPECT_EQ(one_line("\n"), "");
  EXPECT_EQ(one_line(""), "");
}

// Both formats print one line, the text format with the message joined as one_line joins it.
TEST(OneLineFormatterTest, TextAndJsonLinesHoldAMultiLineMessageOnOneLine) {
  const auto time = spdlog::log_clock::time_point(1796104800s + 123ms);
  const std::string message = "pipeline p: run 3 failed: " + std::string(kStatementError);
  const spdlog::details::log_msg record(time, spdlog::source_loc{}, "tidemark", spdlog::level::err,
                                        spdlog::string_view_t(message.data(), message.size()));
  const auto format = [&](std::unique_ptr<spdlog::formatter> inner) {
    OneLineFormatter formatter(std::move(inner));
    const auto copy = formatter.clone();  // spdlog gives each sink a clone
    spdlog::memory_buf_t buffer;
    copy->format(record, buffer);
    return std::string(buffer.data(), buffer.size());
  };
  const std::string text =
      format(std::make_unique<spdlog::pattern_formatter>("%l %v", spdlog::pattern_time_type::utc));
  EXPECT_EQ(text, "error pipeline p: run 3 failed: " + one_line(kStatementError) + "\n");
  const std::string json = format(std::make_unique<JsonLogFormatter>());
  EXPECT_EQ(parse_line(json).at("msg").as_string(), "pipeline p: run 3 failed: " + one_line(kStatementError));
}

TEST(LogOptionsTest, LevelAndFormatNamesAreTheDocumentedOnes) {
  for (const char* name : {"trace", "debug", "info", "warn", "error"}) EXPECT_TRUE(parse_log_level(name)) << name;
  EXPECT_FALSE(parse_log_level("warning"));
  EXPECT_FALSE(parse_log_level("INFO"));
  EXPECT_EQ(parse_log_format("json"), LogFormat::kJson);
  EXPECT_EQ(parse_log_format("text"), LogFormat::kText);
  EXPECT_FALSE(parse_log_format("yaml"));
}

}  // namespace
}  // namespace tidemark::app
