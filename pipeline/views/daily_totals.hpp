#pragma once
// daily_totals: per-day deltas, deduplicated through the inbox (consumer = the version's
// table name). A new version replays the whole history of its events.
#include "pipeline/views/view.hpp"

namespace tidemark::pipeline::views {

inline constexpr char kDailyTotals[] = "daily_totals";

const View& daily_totals_view();

}  // namespace tidemark::pipeline::views
