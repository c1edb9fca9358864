// Five-field cron expressions in UTC: what parses, what is refused (naming the
// field), and the next matching minute. Pure; config validation and the serve scheduler
// both use this parser.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "app/config/cron.hpp"

namespace tidemark::app::config {
namespace {

using namespace std::chrono;

TimePoint at(int y, unsigned m, unsigned d, int hour, int minute, int second = 0) {
  return TimePoint(sys_days(year{y} / month{m} / day{d})) + hours(hour) + minutes(minute) + seconds(second);
}

CronExpression cron(const std::string& text) {
  std::string error;
  auto parsed = CronExpression::parse(text, error);
  EXPECT_TRUE(parsed) << text << ": " << error;
  return *parsed;
}

TEST(CronExpressionTest, StepsRangesAndListsFindTheNextMatchingMinute) {
  EXPECT_EQ(cron("*/5 * * * *").next_after(at(2024, 5, 1, 10, 2, 30)), at(2024, 5, 1, 10, 5));
  EXPECT_EQ(cron("*/5 * * * *").next_after(at(2024, 5, 1, 10, 5)), at(2024, 5, 1, 10, 10));  // strictly after
  EXPECT_EQ(cron("0 2 * * *").next_after(at(2024, 5, 1, 3, 0)), at(2024, 5, 2, 2, 0));
  EXPECT_EQ(cron("15,45 9-17 * * *").next_after(at(2024, 5, 1, 17, 50)), at(2024, 5, 2, 9, 15));
  EXPECT_EQ(cron("0 0 1 * *").next_after(at(2024, 12, 15, 0, 0)), at(2025, 1, 1, 0, 0));
  EXPECT_EQ(cron("0 0 29 2 *").next_after(at(2025, 3, 1, 0, 0)), at(2028, 2, 29, 0, 0));  // leap years only
  EXPECT_EQ(cron("30 8 * * 1-5").next_after(at(2024, 5, 3, 9, 0)), at(2024, 5, 6, 8, 30));  // Friday -> Monday
  EXPECT_EQ(cron("0 12 * * 7").next_after(at(2024, 5, 1, 0, 0)), at(2024, 5, 5, 12, 0));   // 7 is Sunday
  EXPECT_EQ(cron("10-50/20 * * * *").next_after(at(2024, 5, 1, 10, 31)), at(2024, 5, 1, 10, 50));
}

TEST(CronExpressionTest, WhenBothDayFieldsAreRestrictedEitherMatches) {
  // The 13th or any Friday: from Wednesday 2024-05-01, Friday the 3rd comes first.
  EXPECT_EQ(cron("0 0 13 * 5").next_after(at(2024, 5, 1, 0, 0)), at(2024, 5, 3, 0, 0));
  EXPECT_EQ(cron("0 0 13 * 5").next_after(at(2024, 5, 11, 0, 0)), at(2024, 5, 13, 0, 0));
}

TEST(CronExpressionTest, MalformedExpressionsNameTheField) {
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {"61 * * * *", "minute"}, {"* 24 * * *", "hour"}, {"* * 0 * *", "day-of-month"},
           {"* * * 13 *", "month"}, {"* * * * 8", "day-of-week"}, {"*/0 * * * *", "minute"},
           {"5-1 * * * *", "minute"}, {"1,,2 * * * *", "minute"}, {"* * * *", "five fields"}}) {
    std::string error;
    EXPECT_FALSE(CronExpression::parse(text, error)) << text;
    EXPECT_NE(error.find(field), std::string::npos) << text << ": " << error;
  }
}

}  // namespace
}  // namespace tidemark::app::config
