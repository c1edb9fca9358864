// The serve scheduler's arithmetic (issue 4): `every` and cron ticks, with missed ticks
// coalescing into one. Pure. The cron parser itself is tested in tests/unit/app/cron_test.cpp.
#include <gtest/gtest.h>

#include "app/serve/schedule.hpp"

namespace tidemark::app::serve {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

TimePoint at(int y, unsigned m, unsigned d, int hour, int minute, int second = 0) {
  return TimePoint(sys_days(year{y} / month{m} / day{d})) + hours(hour) + minutes(minute) + seconds(second);
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

// The schedule as logged and listed (GET /v1/pipelines): `every 20s` as the config writes
// it, not `every 20000ms`.
TEST(ScheduleTest, DescribeStatesEveryInTheLargestExactUnit) {
  const auto every = [](pipeline::Duration interval) {
    pipeline::ScheduleConfig config;
    config.every = interval;
    return Schedule("transactions", config).describe();
  };
  EXPECT_EQ(every(20s), "every 20s");
  EXPECT_EQ(every(5min), "every 5m");
  EXPECT_EQ(every(2h), "every 2h");
  EXPECT_EQ(every(90s), "every 90s");
  EXPECT_EQ(every(1500ms), "every 1500ms");
  EXPECT_EQ(duration_text(0ms), "0s");
  EXPECT_EQ(duration_text(61s), "61s");
  pipeline::ScheduleConfig cron;
  cron.cron = "*/5 * * * *";
  EXPECT_EQ(Schedule("transactions", cron).describe(), "cron \"*/5 * * * *\" (UTC)");
}

}  // namespace
}  // namespace tidemark::app::serve
