#pragma once
// A check for the options that take a count (--limit, --version): a plain message naming the
// rule and the value ("expected a whole number from 1 to 2147483647, got \"0\""), instead of
// CLI11's own range text ("Value 0 not in range 0.000000 to 1.797693e+308").
#include <limits>

#include <CLI/CLI.hpp>

namespace tidemark::app {

// Decimal digits only (no sign, no spaces, no fraction), from `min` to `max`.
CLI::Validator whole_number(long long min = 1, long long max = std::numeric_limits<int>::max());

}  // namespace tidemark::app
