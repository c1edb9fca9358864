// The serve scheduler's arithmetic (issue 4): five-field cron in UTC and `every`, with
// missed ticks coalescing into one. Pure; it lives with the serve tests because app/serve
// is part of tidemark_lib.
#include <gtest/gtest.h>

#include "app/serve/schedule.hpp"

namespace tidemark::app::serve {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

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

TEST(CronExpressionTest, AnImpossibleDateIsAConfigError) {
  pipeline::ScheduleConfig config;
  config.cron = "0 0 30 2 *";
  EXPECT_THROW(Schedule("transactions", config), pipeline::ConfigError);
}

TEST(ScheduleTest, EveryFiresAtStartThenEachIntervalAndMissedTicksCoalesce) {
  pipeline::ScheduleConfig config;
  config.every = 5min;
  const Schedule schedule("transactions", config);
  const TimePoint start = at(2024, 5, 1, 10, 0);
  EXPECT_EQ(schedule.first(start), start);
  EXPECT_EQ(schedule.next(start, start + 1s), start + 5min);
  // A run that took 17 minutes: the ticks at 5, 10 and 15 are one, the next is at 20.
  EXPECT_EQ(schedule.next(start, start + 17min), start + 20min);
}

TEST(ScheduleTest, CronMissedTicksCoalesceIntoTheNextMatchAfterNow) {
  pipeline::ScheduleConfig config;
  config.cron = "*/5 * * * *";
  const Schedule schedule("transactions", config);
  const TimePoint tick = at(2024, 5, 1, 10, 0);
  EXPECT_EQ(schedule.first(tick - 1s), tick);
  EXPECT_EQ(schedule.next(tick, tick + 12min), at(2024, 5, 1, 10, 15));
}

}  // namespace
}  // namespace tidemark::app::serve
