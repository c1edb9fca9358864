#pragma once
// When a scheduled pipeline runs (docs/configuration.md: schedule: {every: 5m} or
// {cron: "*/5 * * * *"}, five fields, UTC). Pure: the caller supplies the clock.
#include <optional>
#include <string>

#include "app/config/config.hpp"
#include "app/config/cron.hpp"

namespace tidemark::app::serve {

using config::TimePoint;

// A pipeline's schedule. Ticks missed while a run is in progress (or the process is busy)
// coalesce: the next tick is always computed from now, never replayed one by one. Ticks
// whose run could not be recorded (the database away) coalesce too: serve keeps one and runs
// it when the database answers (service.cpp, MissedTick).
class Schedule {
 public:
  // ConfigError naming the pipeline when `every` is not longer than 0 (the config's cron
  // expression comes parsed and checked).
  Schedule(const std::string& pipeline, const app::config::ScheduleConfig& config);
  // `every` fires at start-up and then every interval; cron fires on matching minutes.
  TimePoint first(TimePoint now) const;
  std::optional<TimePoint> next(TimePoint previous, TimePoint now) const;
  std::string describe() const;

 private:
  std::optional<pipeline::Duration> every_;
  std::optional<app::config::CronExpression> cron_;
  std::string text_;
};

}  // namespace tidemark::app::serve
