#pragma once
// Every view Tidemark ships, by name. Adding one is its own file (a View) and one line in
// registry.cpp.
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/views/view.hpp"

namespace tidemark::pipeline::views {

// nullptr when Tidemark ships no view of that name.
const View* find_view(std::string_view name);
// ViewError when Tidemark ships no view of that name.
const View& known_view(std::string_view name);
// In the registry's order.
std::vector<std::string> view_names();
// "account_balance, daily_totals" with `separator` between the names, for messages.
std::string view_list(std::string_view separator);

}  // namespace tidemark::pipeline::views
