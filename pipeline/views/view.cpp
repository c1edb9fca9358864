#include "pipeline/views/view.hpp"

#include "pipeline/views/entity_event.hpp"

namespace tidemark::pipeline::views {

std::string table_name(const std::string& view, int version) { return view + "_v" + std::to_string(version); }

std::string statement(std::string_view query, const std::string& table) {
  std::string text(query);
  const std::string placeholder = "{table}";
  for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + table.size())) {
    text.replace(at, placeholder.size(), table);
  }
  return text;
}

std::optional<ViewEvent> parse_view_event(const OutboxEvent& event) {
  const auto entity_event = parse_entity_event(event);
  if (!entity_event) return std::nullopt;
  return to_view_event(*entity_event);
}

}  // namespace tidemark::pipeline::views
