#include "connectors/http_api/position.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "pipeline/core/percent_encode.hpp"

namespace tidemark::connectors::http_api {

namespace {

constexpr std::string_view kPlaceholder = "{checkpoint}";

std::optional<std::uint64_t> counter(const boost::json::object& object, std::string_view name) {
  const auto* value = object.if_contains(name);
  if (value == nullptr) return std::nullopt;
  if (const auto* u = value->if_uint64()) return *u;
  if (const auto* i = value->if_int64(); i != nullptr && *i >= 0) return static_cast<std::uint64_t>(*i);
  return std::nullopt;
}

}  // namespace

std::string to_text(const PagePosition& position) {
  boost::json::object object;
  object["page"] = position.page;
  object["cursor"] = position.cursor;
  object["consumed"] = position.consumed;
  return boost::json::serialize(object);
}

std::optional<PagePosition> parse_position(std::string_view text) {
  if (text.empty()) return PagePosition{};
  boost::json::error_code ec;
  // Only integers and a string are accepted below: a number with a fraction or an exponent
  // (which Boost.JSON would make a double) is refused, never used.
  const boost::json::value parsed = boost::json::parse(text, ec);
  if (ec || !parsed.is_object()) return std::nullopt;
  const auto& object = parsed.get_object();
  if (object.size() != 3) return std::nullopt;
  const auto page = counter(object, "page");
  const auto consumed = counter(object, "consumed");
  const auto* cursor = object.if_contains("cursor");
  if (!page || !consumed || cursor == nullptr || !cursor->is_string()) return std::nullopt;
  return PagePosition{*page, std::string(cursor->get_string()), *consumed};
}

bool precedes(const PagePosition& earlier, const PagePosition& later) {
  if (earlier.page != later.page) return earlier.page < later.page;
  return earlier.consumed < later.consumed;
}

std::string expand_url(std::string_view url, std::string_view cursor) {
  const std::string encoded = pipeline::percent_encode(cursor, pipeline::is_url_unreserved);
  std::string out;
  std::size_t at = 0;
  for (auto found = url.find(kPlaceholder); found != std::string_view::npos; found = url.find(kPlaceholder, at)) {
    out.append(url.substr(at, found - at)).append(encoded);
    at = found + kPlaceholder.size();
  }
  out.append(url.substr(at));
  return out;
}

}  // namespace tidemark::connectors::http_api
