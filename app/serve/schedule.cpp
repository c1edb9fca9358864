#include "app/serve/schedule.hpp"

#include <algorithm>

namespace tidemark::app::serve {

std::string duration_text(pipeline::Duration duration) {
  struct Unit {
    const char* suffix;
    pipeline::Duration::rep milliseconds;
  };
  static constexpr Unit kUnits[] = {{"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}};
  const auto count = duration.count();
  if (count == 0) return "0s";
  for (const auto& unit : kUnits) {
    if (count % unit.milliseconds == 0) return std::to_string(count / unit.milliseconds) + unit.suffix;
  }
  return std::to_string(count) + "ms";
}

Schedule::Schedule(const std::string& pipeline, const pipeline::ScheduleConfig& config) : every_(config.every) {
  if (config.cron) {
    std::string error;
    cron_ = pipeline::CronExpression::parse(*config.cron, error);
    if (!cron_) {
      throw pipeline::ConfigError("pipelines." + pipeline + ".schedule.cron \"" + *config.cron + "\": " + error);
    }
    if (!cron_->next_after(std::chrono::system_clock::now())) {
      throw pipeline::ConfigError("pipelines." + pipeline + ".schedule.cron \"" + *config.cron +
                                  "\": matches no date (check the day-of-month and month fields)");
    }
    text_ = "cron \"" + *config.cron + "\" (UTC)";
  } else if (every_ && every_->count() > 0) {
    text_ = "every " + duration_text(*every_);
  } else {
    throw pipeline::ConfigError("pipelines." + pipeline + ".schedule.every must be longer than 0ms");
  }
}

TimePoint Schedule::first(TimePoint now) const {
  if (cron_) return cron_->next_after(now).value_or(TimePoint::max());
  return now;
}

std::optional<TimePoint> Schedule::next(TimePoint previous, TimePoint now) const {
  if (cron_) return cron_->next_after(std::max(previous, now));
  // Every interval after the previous tick; intervals missed entirely are skipped, not replayed.
  TimePoint next = previous + *every_;
  if (next <= now) next += ((now - next) / *every_ + 1) * *every_;
  return next;
}

std::string Schedule::describe() const { return text_; }

}  // namespace tidemark::app::serve
