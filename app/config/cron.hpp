#pragma once
// Five-field cron expressions in UTC (docs/configuration.md: schedule: {cron: "*/5 * * * *"}).
// Pure: the caller supplies the clock. The one parser: config validation rejects what it
// refuses (file:line, key), and the serve scheduler computes its ticks with it.
#include <bitset>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace tidemark::app::config {

using TimePoint = std::chrono::system_clock::time_point;

// A five-field cron expression: minute hour day-of-month month day-of-week (0-7, 0 and 7
// are Sunday), each `*`, a number, a range `a-b`, a step `*/n` or `a-b/n`, or a list of those.
// As in cron, when both day fields are restricted a day matches if either does.
class CronExpression {
 public:
  // nullopt and `error` set (naming the field) when the text is not such an expression.
  static std::optional<CronExpression> parse(std::string_view text, std::string& error);
  // The first whole minute strictly after `after` that matches; nullopt when none does
  // within five years (e.g. "0 0 30 2 *").
  std::optional<TimePoint> next_after(TimePoint after) const;

 private:
  bool matches_day(int day_of_month, int month, int day_of_week) const;

  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;
  std::bitset<13> months_;
  std::bitset<7> days_of_week_;
  bool day_of_month_restricted_ = false;
  bool day_of_week_restricted_ = false;
};

}  // namespace tidemark::app::config
