#include "app/serve/schedule.hpp"

#include <algorithm>

namespace tidemark::app::serve {

Schedule::Schedule(const std::string& pipeline, const app::config::ScheduleConfig& config) {
  if (config.cron) {
    cron_ = config.cron->expression;  // parsed and checked by the config
    text_ = "cron \"" + config.cron->text + "\" (UTC)";
  } else if (config.every && config.every->value.count() > 0) {
    every_ = config.every->value;
    text_ = "every " + config.every->text;
  } else {
    throw app::config::ConfigError("pipelines." + pipeline + ".schedule.every must be longer than 0ms");
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
