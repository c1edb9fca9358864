// `source: {kind: postgres, ...}` in the config (docs/configuration.md, docs/sources.md
// "postgres"): what it parses into and the error, with file, line and key, for each rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "app/config/config.hpp"
#include "app/config/tests/config_errors.hpp"

namespace tidemark::app::config {
namespace {

using ::testing::StartsWith;
using Consistency = connectors::postgres::Consistency;

TEST(ParsePostgresSource, ReadsEveryKey) {
  const auto config = parse_config(
      "pipelines:\n"
      "  orders:\n"
      "    source:\n"
      "      kind: postgres\n"
      "      url_env: SOURCE_DB_URL\n"
      "      table: public.orders\n"
      "      cursor: [updated_at, id]\n"
      "      columns: {order_id: id, amount: total}\n"
      "      safety_lag: 30s\n",
      "config.yaml");
  const SourceConfig& source = config.pipelines.at("orders").source;
  EXPECT_EQ(source.kind(), "postgres");
  EXPECT_EQ(source.kind(), "postgres");
  EXPECT_EQ(postgres_of(source).url_env, "SOURCE_DB_URL");
  EXPECT_EQ(postgres_of(source).table, "public.orders");
  EXPECT_EQ(postgres_of(source).cursor, (std::vector<std::string>{"updated_at", "id"}));
  EXPECT_EQ(postgres_of(source).columns,
            (std::vector<std::pair<std::string, std::string>>{{"order_id", "id"}, {"amount", "total"}}));
  EXPECT_EQ(postgres_of(source).consistency, Consistency::kSafetyLag);
  EXPECT_EQ(postgres_of(source).safety_lag, std::chrono::seconds(30));
  EXPECT_EQ(postgres_of(source).origin, "config.yaml:3: pipelines.orders.source");
}

TEST(ParsePostgresSource, DefaultsToAFiveSecondSafetyLag) {
  const auto config = parse_config(pipeline_with("{kind: postgres, url_env: U, table: t, cursor: [ts, id]}"), "c.yaml");
  EXPECT_EQ(postgres_of(config.pipelines.at("orders").source).consistency, Consistency::kSafetyLag);
  EXPECT_EQ(postgres_of(config.pipelines.at("orders").source).safety_lag, std::chrono::seconds(5));
}

TEST(ParsePostgresSource, SnapshotTakesACursorOfOneColumn) {
  const auto config =
      parse_config(pipeline_with("{kind: postgres, url_env: U, table: t, cursor: [id], consistency: snapshot}"), "c.yaml");
  EXPECT_EQ(postgres_of(config.pipelines.at("orders").source).consistency, Consistency::kSnapshot);
}

TEST(ParsePostgresSource, EachRuleIsAnErrorNamingTheKeyAndLine) {
  const std::string head = "{kind: postgres, url_env: U, table: t, ";
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: [id]}")),
              StartsWith("config.yaml:3: pipelines.orders.source.cursor: a cursor of one column needs consistency: snapshot"));
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: [ts, id], consistency: snapshot, safety_lag: 5s}")),
              StartsWith("config.yaml:3: pipelines.orders.source.safety_lag: applies to consistency: safety_lag only"));
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: [ts, id], consistency: eventual}")),
              StartsWith("config.yaml:3: pipelines.orders.source.consistency: expected safety_lag (the default) or snapshot"));
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: [ts, id], safety_lag: 0s}")),
              StartsWith("config.yaml:3: pipelines.orders.source.safety_lag: expected a positive duration"));
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: []}")),
              StartsWith("config.yaml:3: pipelines.orders.source.cursor: expected a list of the columns"));
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: id}")),
              StartsWith("config.yaml:3: pipelines.orders.source.cursor: expected a list of the columns"));
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: [id, id], consistency: snapshot}")),
              StartsWith("config.yaml:3: pipelines.orders.source.cursor[1]: column id is in the cursor twice"));
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: [ts, id], columns: {a: x, b: x}}")),
              StartsWith("config.yaml:3: pipelines.orders.source.columns.b: column x is already mapped to field a"));
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: [ts, id], columns: [a]}")),
              StartsWith("config.yaml:3: pipelines.orders.source.columns: expected a map from field name to source column"));
  EXPECT_THAT(config_error(pipeline_with(head + "cursor: [ts, id], path: a.csv}")),
              StartsWith("config.yaml:3: unknown key 'path' in pipelines.orders.source"));
  EXPECT_THAT(config_error(pipeline_with("{kind: postgres, url_env: 'not a name', table: t, cursor: [ts, id]}")),
              StartsWith("config.yaml:3: pipelines.orders.source.url_env: expected the name of an environment variable"));
  EXPECT_THAT(config_error(pipeline_with("{kind: postgres, url: postgresql://x, url_env: U, table: t, cursor: [ts, id]}")),
              StartsWith("config.yaml:3: unknown key 'url' in pipelines.orders.source"));
  EXPECT_THAT(config_error(pipeline_with("{kind: postgres, table: t, cursor: [ts, id]}")),
              StartsWith("config.yaml:3: pipelines.orders.source: missing required key 'url_env'"));
  EXPECT_THAT(config_error(pipeline_with("{kind: postgres, url_env: U, cursor: [ts, id]}")),
              StartsWith("config.yaml:3: pipelines.orders.source: missing required key 'table'"));
  EXPECT_THAT(config_error(pipeline_with("{kind: postgres, url_env: U, table: t}")),
              StartsWith("config.yaml:3: pipelines.orders.source: missing required key 'cursor'"));
  EXPECT_THAT(config_error(pipeline_with("{kind: kafka, path: a.csv}")),
              StartsWith("config.yaml:3: pipelines.orders.source.kind: expected file, postgres, http or nats"));
}

}  // namespace
}  // namespace tidemark::app::config
