// What the handlers of every area share.
#include "app/serve/handlers.hpp"

#include <charconv>

#include <boost/json.hpp>

#include "pipeline/store/pg/row.hpp"

namespace tidemark::app::serve {

HttpResponse json_response(int status, const boost::json::value& body) {
  return HttpResponse{status, "application/json", boost::json::serialize(body) + "\n", {}};
}

HttpResponse error_response(int status, const std::string& message) {
  return json_response(status, boost::json::object{{"error", message}});
}

std::optional<std::int64_t> positive_integer(std::string_view text) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

HttpResponse stored_document(ApiContext& context, const std::string& id, std::string_view statement,
                             std::string_view what, const std::string& missing) {
  const auto number = positive_integer(id);
  if (!number) return error_response(404, missing + " " + id);
  std::optional<std::string> json;
  context.pool.with_connection(what, [&](pqxx::connection& connection) {
    pqxx::nontransaction txn(connection);
    const auto rows = txn.exec_params(std::string(statement), *number);
    if (!rows.empty()) json = pipeline::db::Row(rows[0]).text("document");
  });
  if (!json) return error_response(404, missing + " " + id);
  return HttpResponse{200, "application/json", *json + "\n", {}};
}

}  // namespace tidemark::app::serve
