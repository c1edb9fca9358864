// The serve scheduler's arithmetic: `every` and cron ticks, with missed ticks
// coalescing into one. Pure. The cron parser itself is tested in app/config/tests/cron_test.cpp.
#include <gtest/gtest.h>

#include "app/serve/schedule.hpp"

namespace tidemark::app::serve {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

TimePoint at(int y, unsigned m, unsigned d, int hour, int minute, int second = 0) {
  return TimePoint(sys_days(year{y} / month{m} / day{d})) + hours(hour) + minutes(minute) + seconds(second);
}

// A cron schedule as the config gives it: parsed once, with its text.
app::config::WrittenCron cron(const std::string& text) {
  std::string error;
  return {app::config::CronExpression::parse(text, error).value(), text};
}

// The config refuses it, so that serve never sees it.
TEST(CronExpressionTest, AnImpossibleDateIsAConfigError) {
  EXPECT_THROW(app::config::parse_config("pipelines:\n  p:\n    source: {path: in.csv}\n"
                                      "    schedule: {cron: \"0 0 30 2 *\"}\n",
                                      "config.yaml"),
               app::config::ConfigError);
}

TEST(ScheduleTest, EveryFiresAtStartThenEachIntervalAndMissedTicksCoalesce) {
  app::config::ScheduleConfig config;
  config.every = app::config::WrittenDuration{5min, "5m"};
  const Schedule schedule("transactions", config);
  const TimePoint start = at(2024, 5, 1, 10, 0);
  EXPECT_EQ(schedule.first(start), start);
  EXPECT_EQ(schedule.next(start, start + 1s), start + 5min);
  // A run that took 17 minutes: the ticks at 5, 10 and 15 are one, the next is at 20.
  EXPECT_EQ(schedule.next(start, start + 17min), start + 20min);
}

TEST(ScheduleTest, CronMissedTicksCoalesceIntoTheNextMatchAfterNow) {
  app::config::ScheduleConfig config;
  config.cron = cron("*/5 * * * *");
  const Schedule schedule("transactions", config);
  const TimePoint tick = at(2024, 5, 1, 10, 0);
  EXPECT_EQ(schedule.first(tick - 1s), tick);
  EXPECT_EQ(schedule.next(tick, tick + 12min), at(2024, 5, 1, 10, 15));
}

// The schedule as logged and listed (GET /v1/pipelines): `every 20s` as the config writes
// it, not `every 20000ms`, nor `every 1m` for `60s`.
TEST(ScheduleTest, DescribeStatesEveryAsTheConfigWritesIt) {
  const auto every = [](std::string_view text) {
    const auto parsed = app::config::parse_config("pipelines:\n  p:\n    source: {path: in.csv}\n"
                                               "    schedule: {every: " + std::string(text) + "}\n",
                                               "config.yaml");
    return Schedule("p", *parsed.pipelines.at("p").schedule).describe();
  };
  for (const auto* text : {"20s", "60s", "5m", "120m", "2h", "90s", "1000ms", "1500ms"}) {
    EXPECT_EQ(every(text), "every " + std::string(text));
  }
  EXPECT_EQ(pipeline::format_duration(61s), "61s");
  EXPECT_EQ(pipeline::format_duration(1500ms), "1500ms");
  app::config::ScheduleConfig config;
  config.cron = cron("*/5 * * * *");
  EXPECT_EQ(Schedule("transactions", config).describe(), "cron \"*/5 * * * *\" (UTC)");
}

}  // namespace
}  // namespace tidemark::app::serve
