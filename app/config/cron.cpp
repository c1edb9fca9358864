#include "app/config/cron.hpp"

#include <charconv>
#include <sstream>
#include <vector>

namespace tidemark::app::config {

namespace {

struct Field {
  const char* name;
  int low;
  int high;
};

constexpr Field kFields[] = {{"minute", 0, 59}, {"hour", 0, 23}, {"day-of-month", 1, 31}, {"month", 1, 12},
                             {"day-of-week", 0, 7}};

std::optional<int> number(std::string_view text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// Sets the bits of one field ("*/15", "1-5", "0,30"); false when malformed or out of range.
bool parse_field(std::string_view text, const Field& field, std::vector<bool>& bits) {
  bits.assign(field.high + 1, false);
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty() || (comma != std::string_view::npos && text.empty())) return false;
    int step = 1;
    if (const auto slash = item.find('/'); slash != std::string_view::npos) {
      const auto parsed = number(item.substr(slash + 1));
      if (!parsed || *parsed < 1) return false;
      step = *parsed;
      item = item.substr(0, slash);
    }
    int low = field.low;
    int high = field.high;
    if (item != "*") {
      const auto dash = item.find('-');
      const auto first = number(item.substr(0, dash));
      const auto last = dash == std::string_view::npos ? first : number(item.substr(dash + 1));
      if (!first || !last || *first < field.low || *last > field.high || *first > *last) return false;
      low = *first;
      // "5/10" means 5, 15, 25, … as in Vixie cron.
      high = dash == std::string_view::npos && step > 1 ? field.high : *last;
    }
    for (int value = low; value <= high; value += step) bits[value] = true;
  }
  return true;
}

template <std::size_t N>
void copy_bits(const std::vector<bool>& bits, std::bitset<N>& out, int offset = 0) {
  for (std::size_t i = 0; i < bits.size(); ++i) {
    if (bits[i]) out.set((i + offset) % N);
  }
}

}  // namespace

std::optional<CronExpression> CronExpression::parse(std::string_view text, std::string& error) {
  std::istringstream words{std::string(text)};
  std::vector<std::string> fields;
  for (std::string word; words >> word;) fields.push_back(word);
  if (fields.size() != 5) {
    error = "expected five fields (minute hour day-of-month month day-of-week), got " + std::to_string(fields.size());
    return std::nullopt;
  }
  CronExpression cron;
  std::vector<bool> bits;
  for (std::size_t i = 0; i < 5; ++i) {
    if (!parse_field(fields[i], kFields[i], bits)) {
      error = std::string(kFields[i].name) + " field '" + fields[i] + "': expected *, N, N-M, */S or N-M/S (" +
              std::to_string(kFields[i].low) + "-" + std::to_string(kFields[i].high) + "), comma-separated";
      return std::nullopt;
    }
    switch (i) {
      case 0: copy_bits(bits, cron.minutes_); break;
      case 1: copy_bits(bits, cron.hours_); break;
      case 2: copy_bits(bits, cron.days_of_month_); cron.day_of_month_restricted_ = fields[i] != "*"; break;
      case 3: copy_bits(bits, cron.months_); break;
      default: copy_bits(bits, cron.days_of_week_); cron.day_of_week_restricted_ = fields[i] != "*"; break;  // 7 -> 0
    }
  }
  return cron;
}

bool CronExpression::matches_day(int day_of_month, int month, int day_of_week) const {
  if (!months_[month]) return false;
  const bool dom = days_of_month_[day_of_month];
  const bool dow = days_of_week_[day_of_week];
  if (day_of_month_restricted_ && day_of_week_restricted_) return dom || dow;
  return dom && dow;
}

std::optional<TimePoint> CronExpression::next_after(TimePoint after) const {
  using namespace std::chrono;
  const auto start = floor<minutes>(after) + minutes(1);
  sys_days day = floor<days>(start);
  auto minute_of_day = static_cast<int>((start - day) / minutes(1));
  for (int i = 0; i < 5 * 366 + 1; ++i, day += days(1), minute_of_day = 0) {
    const year_month_day date{day};
    if (!matches_day(static_cast<int>(static_cast<unsigned>(date.day())),
                     static_cast<int>(static_cast<unsigned>(date.month())),
                     static_cast<int>(weekday{day}.c_encoding()))) {
      continue;
    }
    for (int minute = minute_of_day; minute < 24 * 60; ++minute) {
      if (hours_[minute / 60] && minutes_[minute % 60]) return TimePoint(day) + minutes(minute);
    }
  }
  return std::nullopt;
}

}  // namespace tidemark::app::config
