#include "pipeline/views/registry.hpp"

#include "pipeline/views/account_balance.hpp"
#include "pipeline/views/daily_totals.hpp"

namespace tidemark::pipeline::views {

namespace {

const std::vector<const View*>& all_views() {
  static const std::vector<const View*> views{
      &account_balance_view(),
      &daily_totals_view(),
  };
  return views;
}

}  // namespace

const View* find_view(std::string_view name) {
  for (const View* view : all_views()) {
    if (view->name() == name) return view;
  }
  return nullptr;
}

const View& known_view(std::string_view name) {
  if (const View* view = find_view(name)) return *view;
  throw ViewError("unknown view '" + std::string(name) + "': tidemark ships " + view_list(" and "));
}

std::vector<std::string> view_names() {
  std::vector<std::string> names;
  for (const View* view : all_views()) names.emplace_back(view->name());
  return names;
}

std::string view_list(std::string_view separator) {
  std::string list;
  for (const View* view : all_views()) {
    if (!list.empty()) list += separator;
    list += view->name();
  }
  return list;
}

}  // namespace tidemark::pipeline::views
