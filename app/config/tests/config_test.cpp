#include "app/config/config.hpp"
#include "app/config/tests/config_errors.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include <fstream>
#include <optional>
#include <map>
#include <utility>
#include <vector>

namespace tidemark::app::config {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using pipeline::built_in_transaction_entity;
using pipeline::ExtraFields;
using pipeline::FieldSpec;
using pipeline::FieldType;
using pipeline::format_duration;
using pipeline::kDefaultMaxTextLength;
using pipeline::parse_rejection_limit;

// A valid pipeline to which tests append one faulty line or block.
constexpr const char* kPipelineHead =
    "pipelines:\n"                        // 1
    "  transactions:\n"                   // 2
    "    source: {path: data/in.csv}\n";  // 3

TEST(ParseConfig, FullFileRoundTripsIntoTheStructs) {
  const auto config = parse_config(R"(database: postgresql://tidemark@127.0.0.1:5432/tidemark
http: {listen: 0.0.0.0:9090}
pipelines:
  transactions:
    source: {kind: file, path: data/in, format: csv}
    batch_size: 500
    schedule: {every: 5m}
    destinations:
      - {name: ledger, kind: http, url: http://127.0.0.1:9000/events, secret_env: LEDGER_SECRET}
      - name: balances
        kind: view
  refunds:
    source:
      path: data/refunds.ndjson
    schedule:
      cron: "*/15 1-5 * * 1,3"
relay: {max_attempts: 3, base_delay: 250ms, max_delay: 2h, max_in_flight: 4, connect_timeout: 2s,
        request_timeout: 30s}
)",
                                   "config.yaml");
  EXPECT_EQ(config.database, "postgresql://tidemark@127.0.0.1:5432/tidemark");
  EXPECT_EQ(config.http.listen, "0.0.0.0:9090");
  ASSERT_EQ(config.pipelines.size(), 2u);

  const auto& transactions = config.pipelines.at("transactions");
  EXPECT_EQ(transactions.name, "transactions");
  EXPECT_EQ(transactions.source.kind(), "file");
  EXPECT_EQ(file_of(transactions.source).path, "data/in");
  EXPECT_EQ(file_of(transactions.source).format, Format::kCsv);
  EXPECT_EQ(transactions.batch_size, 500u);
  ASSERT_TRUE(transactions.schedule.has_value());
  EXPECT_EQ(transactions.schedule->every->value, minutes(5));
  EXPECT_EQ(transactions.schedule->every->text, "5m");
  EXPECT_FALSE(transactions.schedule->cron.has_value());
  ASSERT_EQ(transactions.destinations.size(), 2u);
  EXPECT_EQ(transactions.destinations[0].name, "ledger");
  EXPECT_EQ(transactions.destinations[0].kind(), "http");
  const auto* ledger = transactions.destinations[0].get_if<connectors::http::HttpDestinationOptions>();
  ASSERT_NE(ledger, nullptr);
  EXPECT_EQ(ledger->url, "http://127.0.0.1:9000/events");
  EXPECT_EQ(ledger->secret_env, "LEDGER_SECRET");
  EXPECT_TRUE(transactions.destinations[0].capabilities().windowed);
  EXPECT_EQ(transactions.destinations[1].name, "balances");
  EXPECT_EQ(transactions.destinations[1].kind(), "view");
  EXPECT_NE(transactions.destinations[1].get_if<ViewDestinationOptions>(), nullptr);
  EXPECT_TRUE(transactions.destinations[1].capabilities().view);
  EXPECT_TRUE(transactions.destinations[1].capabilities().shared);
  EXPECT_FALSE(transactions.destinations[1].capabilities().windowed);

  const auto& refunds = config.pipelines.at("refunds");
  EXPECT_EQ(file_of(refunds.source).path, "data/refunds.ndjson");
  EXPECT_EQ(file_of(refunds.source).format, Format::kJsonl);  // from the .ndjson extension
  EXPECT_EQ(refunds.batch_size, 10000u);
  ASSERT_TRUE(refunds.schedule.has_value());
  EXPECT_EQ(refunds.schedule->cron->text, "*/15 1-5 * * 1,3");
  EXPECT_FALSE(refunds.schedule->every.has_value());
  EXPECT_TRUE(refunds.destinations.empty());

  EXPECT_EQ(config.relay.max_attempts, 3);
  EXPECT_EQ(config.relay.base_delay, milliseconds(250));
  EXPECT_EQ(config.relay.max_delay, hours(2));
  EXPECT_EQ(config.relay.max_in_flight, 4u);
  EXPECT_EQ(config.relay.connect_timeout, seconds(2));
  EXPECT_EQ(config.relay.request_timeout, seconds(30));

  const auto destinations = config.destinations();
  ASSERT_EQ(destinations.size(), 2u);
  EXPECT_EQ(destinations.at("ledger").get_if<connectors::http::HttpDestinationOptions>()->url,
            "http://127.0.0.1:9000/events");
  EXPECT_EQ(destinations.at("balances").kind(), "view");
}

TEST(ParseConfig, OmittedSectionsTakeTheDefaults) {
  const auto config = parse_config(kPipelineHead, "config.yaml");
  const RelayConfig defaults;
  EXPECT_FALSE(config.database.has_value());
  EXPECT_EQ(config.http.listen, "127.0.0.1:8080");
  EXPECT_EQ(config.pipelines.at("transactions").batch_size, 10000u);
  EXPECT_FALSE(config.pipelines.at("transactions").schedule.has_value());
  EXPECT_EQ(config.relay.max_attempts, defaults.max_attempts);
  EXPECT_EQ(config.relay.base_delay, defaults.base_delay);
  EXPECT_EQ(config.relay.max_delay, defaults.max_delay);
  EXPECT_EQ(config.relay.max_in_flight, defaults.max_in_flight);
  EXPECT_EQ(config.relay.connect_timeout, defaults.connect_timeout);
  EXPECT_EQ(config.relay.request_timeout, defaults.request_timeout);
}

TEST(ParseConfig, SettleAndMaxRejectedDefaultToTwoSecondsAndUnlimited) {
  const Config config = parse_config(kPipelineHead, "config.yaml");
  const auto& pipeline = config.pipelines.at("transactions");
  EXPECT_EQ(file_of(pipeline.source).settle, seconds(2));
  EXPECT_FALSE(pipeline.max_rejected.has_value());
  EXPECT_EQ(pipeline.max_batch_bytes, 16u * 1024 * 1024);
}

TEST(ParseConfig, MaxBatchBytesIsReadAndChecked) {
  EXPECT_EQ(parse_config(std::string(kPipelineHead) + "    max_batch_bytes: 1048576\n", "config.yaml")
                .pipelines.at("transactions")
                .max_batch_bytes,
            1048576u);
  for (const auto* bad : {"0", "16MiB", "-1", "1073741825"}) {
    EXPECT_THAT(config_error(std::string(kPipelineHead) + "    max_batch_bytes: " + bad + "\n"),
                StartsWith("config.yaml:4: pipelines.transactions.max_batch_bytes: expected a number of bytes from 1 "
                           "to 1073741824"))
        << bad;
  }
}

TEST(ParseConfig, SettleAndMaxRejectedAreRead) {
  const auto config = parse_config(
      "pipelines:\n"
      "  a: {source: {path: a.csv, settle: 0s}, max_rejected: 25}\n"
      "  b: {source: {path: b.csv, settle: 500ms}, max_rejected: 2.5%}\n",
      "config.yaml");
  const auto& a = config.pipelines.at("a");
  EXPECT_EQ(file_of(a.source).settle, milliseconds(0));
  ASSERT_TRUE(a.max_rejected.has_value());
  EXPECT_EQ(a.max_rejected->count, 25u);
  EXPECT_FALSE(a.max_rejected->percent.has_value());
  const auto& b = config.pipelines.at("b");
  EXPECT_EQ(file_of(b.source).settle, milliseconds(500));
  ASSERT_TRUE(b.max_rejected.has_value());
  EXPECT_EQ(b.max_rejected->percent, 2.5);
  EXPECT_EQ(b.max_rejected->text, "2.5%");
}

TEST(ParseConfig, OnChangeDefaultsToRereadAndIsReadOrRefusedNamingLineAndKey) {
  using connectors::file::ChangePolicy;
  EXPECT_EQ(file_of(parse_config(kPipelineHead, "config.yaml").pipelines.at("transactions").source).on_change,
            ChangePolicy::kReread);
  const auto config = parse_config(
      "pipelines:\n"
      "  a: {source: {path: a.csv, on_change: fail}}\n"
      "  b: {source: {path: b.csv, on_change: reread}}\n",
      "config.yaml");
  EXPECT_EQ(file_of(config.pipelines.at("a").source).on_change, ChangePolicy::kFail);
  EXPECT_EQ(file_of(config.pipelines.at("b").source).on_change, ChangePolicy::kReread);
  EXPECT_THAT(config_error("pipelines:\n  p:\n    source: {path: a.csv, on_change: ignore}\n"),
              StartsWith("config.yaml:3: pipelines.p.source.on_change: expected reread or fail"));
}

TEST(ParseConfigErrors, BadSettleOrMaxRejectedNamesLineAndKey) {
  EXPECT_THAT(config_error("pipelines:\n  p:\n    source: {path: a.csv, settle: soon}\n"),
              StartsWith("config.yaml:3: pipelines.p.source.settle: expected a duration"));
  for (const auto* bad : {"-1", "ten", "5 %", "101%", "%", "1e2%", ".5%", "-5%"}) {
    EXPECT_THAT(config_error(std::string(kPipelineHead) + "    max_rejected: \"" + bad + "\"\n"),
                StartsWith("config.yaml:4: pipelines.transactions.max_rejected: expected a count (e.g. 100) or a "
                           "percentage (e.g. 5%)"))
        << bad;
  }
}

TEST(RejectionLimit, CountAndPercentOfTheInput) {
  const auto count = parse_rejection_limit("3").value();
  EXPECT_FALSE(count.exceeded_by(3, 3));
  EXPECT_TRUE(count.exceeded_by(4, 1000));
  const auto percent = parse_rejection_limit("10%").value();
  EXPECT_FALSE(percent.exceeded_by(10, 100));
  EXPECT_TRUE(percent.exceeded_by(11, 100));
  EXPECT_TRUE(parse_rejection_limit("0").value().exceeded_by(1, 1));
  EXPECT_FALSE(parse_rejection_limit("100%").value().exceeded_by(5, 5));
  EXPECT_FALSE(parse_rejection_limit("0%").value().exceeded_by(0, 5));
}

TEST(ParseConfig, EmptyFileIsAllDefaults) {
  const auto config = parse_config("# nothing configured\n", "config.yaml");
  EXPECT_TRUE(config.pipelines.empty());
  EXPECT_FALSE(config.database.has_value());
}

TEST(ParseConfig, FormatComesFromTheExtension) {
  const auto format_of = [](const std::string& path) {
    return file_of(parse_config("pipelines:\n  p:\n    source: {path: " + path + "}\n", "c.yaml").pipelines.at("p").source)
        .format;
  };
  EXPECT_EQ(format_of("in.csv"), Format::kCsv);
  EXPECT_EQ(format_of("in.CSV"), Format::kCsv);
  EXPECT_EQ(format_of("in.jsonl"), Format::kJsonl);
  EXPECT_EQ(format_of("in.JsonL"), Format::kJsonl);
  EXPECT_EQ(format_of("in.ndjson"), Format::kJsonl);
}

// Kinds, formats and triggers are enums; their names (API output, runs.trigger) stay as they were.
TEST(ParseConfig, KindFormatAndTriggerNames) {
  EXPECT_EQ(SourceConfig{}.kind(), "file");
  EXPECT_EQ(DestinationConfig{}.kind(), "http");
  EXPECT_EQ(DestinationConfig{.options = ViewDestinationOptions{}}.kind(), "view");
  EXPECT_EQ(DestinationConfig{.options = connectors::nats_sink::NatsDestinationOptions{}}.kind(), "nats");
  EXPECT_EQ(to_string(Format::kCsv), "csv");
  EXPECT_EQ(to_string(Format::kJsonl), "jsonl");
  EXPECT_EQ(to_string(Trigger::kCli), "cli");
  EXPECT_EQ(to_string(Trigger::kSchedule), "schedule");
  EXPECT_EQ(to_string(Trigger::kWebhook), "webhook");
}

TEST(ParseConfig, ExplicitFormatOverridesTheExtension) {
  const auto config = parse_config("pipelines:\n  p:\n    source: {path: in.txt, format: jsonl}\n", "c.yaml");
  EXPECT_EQ(file_of(config.pipelines.at("p").source).format, Format::kJsonl);
}

TEST(ParseConfigErrors, UnknownTopLevelKeyNamesLineAndAllowedKeys) {
  EXPECT_EQ(config_error("database: postgresql:///x\npipeline: {}\n"),
            "config.yaml:2: unknown key 'pipeline' at the top level "
            "(expected one of: database, log, http, entities, views, pipelines, relay, retention)");
}

TEST(ParseConfig, HttpLimitsAndRetentionOfRequests) {
  const auto defaults = parse_config(kPipelineHead, "config.yaml");
  EXPECT_EQ(defaults.http.max_connections, 1024u);
  EXPECT_FALSE(defaults.http.allow_unauthenticated);
  EXPECT_EQ(defaults.retention.requests, std::chrono::hours(24 * 7));
  const auto config = parse_config(std::string(kPipelineHead) +
                                       "http: {max_connections: 8, allow_unauthenticated: true}\n"
                                       "retention: {requests: 2h}\n",
                                   "config.yaml");
  EXPECT_EQ(config.http.max_connections, 8u);
  EXPECT_TRUE(config.http.allow_unauthenticated);
  EXPECT_EQ(config.retention.requests, std::chrono::hours(2));
  EXPECT_EQ(config_error("http: {allow_unauthenticated: yes}\n"),
            "config.yaml:1: http.allow_unauthenticated: expected true or false, got \"yes\"");
  EXPECT_EQ(config_error("http: {max_connections: 0}\n"),
            "config.yaml:1: http.max_connections: expected an integer from 1 to 1000000, got \"0\"");
}

TEST(ParseConfig, HttpAllowedHostsAreNamesWithoutAPort) {
  EXPECT_TRUE(parse_config(kPipelineHead, "config.yaml").http.allowed_hosts.empty());
  const auto config = parse_config(
      std::string(kPipelineHead) + "http: {allowed_hosts: [tidemark.internal, 10.0.0.5, \"[fd00::5]\"]}\n", "config.yaml");
  EXPECT_EQ(config.http.allowed_hosts, (std::vector<std::string>{"tidemark.internal", "10.0.0.5", "[fd00::5]"}));
  for (const char* wrong : {"tidemark.internal:8080", "http://tidemark.internal", "\"\"", "fd00::5"}) {
    EXPECT_THAT(config_error(std::string("http: {allowed_hosts: [") + wrong + "]}\n"),
                HasSubstr("http.allowed_hosts[0]: expected a host name without a port"))
        << wrong;
  }
  EXPECT_EQ(config_error("http: {allowed_hosts: tidemark.internal}\n"),
            "config.yaml:1: http.allowed_hosts: expected a list of host names, e.g. [tidemark.internal], "
            "got \"tidemark.internal\"");
}

TEST(ParseConfigErrors, UnknownNestedKeyNamesLineAndPath) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    batchsize: 10\n"),
            "config.yaml:4: unknown key 'batchsize' in pipelines.transactions "
            "(expected one of: entity, source, batch_size, max_batch_bytes, max_rejected, schedule, destinations)");
}

TEST(ParseConfigErrors, SecretInTheFileIsAnUnknownKeyThatPointsToSecretEnv) {
  const auto message = config_error(std::string(kPipelineHead) +
                                    "    destinations:\n"
                                    "      - name: ledger\n"
                                    "        kind: http\n"
                                    "        url: https://example.com/hook\n"
                                    "        secret: whsec_abc\n");
  EXPECT_THAT(message, StartsWith("config.yaml:8: unknown key 'secret' in pipelines.transactions.destinations[0]"));
  EXPECT_THAT(message, HasSubstr("use secret_env"));
}

TEST(ParseConfigErrors, DuplicateKeyNamesBothLines) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    batch_size: 10\n    batch_size: 20\n"),
            "config.yaml:5: duplicate key 'batch_size' in pipelines.transactions (first at line 4)");
}

TEST(ParseConfigErrors, BadBatchSizeNamesLineAndKey) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    batch_size: ten\n"),
            "config.yaml:4: pipelines.transactions.batch_size: expected a positive integer (at most 1000000), "
            "got \"ten\"");
  for (const auto* bad : {"0", "-5", "1.5", "1000001", "99999999999999999999999"}) {
    EXPECT_THAT(config_error(std::string(kPipelineHead) + "    batch_size: " + bad + "\n"),
                StartsWith("config.yaml:4: pipelines.transactions.batch_size: expected a positive integer"))
        << bad;
  }
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    batch_size: 1000000\n"), "");
}

TEST(ParseConfigErrors, BadDurationNamesLineAndKey) {
  EXPECT_THAT(config_error(std::string(kPipelineHead) + "    schedule: {every: 5 minutes}\n"),
              StartsWith("config.yaml:4: pipelines.transactions.schedule.every: expected a positive duration"));
  EXPECT_THAT(
      config_error("relay:\n  max_attempts: 3\n  base_delay: 1.5s\n"),
      AllOf(StartsWith("config.yaml:3: relay.base_delay: expected a positive duration"), HasSubstr("got \"1.5s\"")));
  EXPECT_THAT(config_error("relay: {connect_timeout: 0s}\n"),
              StartsWith("config.yaml:1: relay.connect_timeout: expected a positive duration"));
}

TEST(ParseConfigErrors, MissingSourcePathNamesTheSource) {
  EXPECT_EQ(config_error("pipelines:\n  transactions:\n    source: {kind: file, format: csv}\n"),
            "config.yaml:3: pipelines.transactions.source: missing required key 'path'");
}

TEST(ParseConfigErrors, MissingSourceNamesThePipeline) {
  EXPECT_EQ(config_error("pipelines:\n  transactions:\n    batch_size: 5\n"),
            "config.yaml:3: pipelines.transactions: missing required key 'source'");
}

TEST(ParseConfigErrors, BadFormatNamesLineAndKey) {
  EXPECT_EQ(config_error("pipelines:\n  transactions:\n    source:\n      path: data/in\n      format: xml\n"),
            "config.yaml:5: pipelines.transactions.source.format: expected csv or jsonl, got \"xml\"");
}

TEST(ParseConfigErrors, FolderWithoutFormatAsksForFormat) {
  EXPECT_EQ(config_error("pipelines:\n  transactions:\n    source: {path: data/in}\n"),
            "config.yaml:3: pipelines.transactions.source: cannot tell the format of 'data/in' from its extension "
            "(.csv, .jsonl, .ndjson): add format: csv or format: jsonl");
}

TEST(ParseConfigErrors, UnknownSourceKindIsRejected) {
  EXPECT_THAT(config_error("pipelines:\n  p:\n    source: {kind: kafka, path: x.csv}\n"),
              StartsWith("config.yaml:3: pipelines.p.source.kind: expected file"));
}

TEST(ParseConfigErrors, HttpDestinationWithoutUrlOrSecretEnv) {
  EXPECT_EQ(
      config_error(std::string(kPipelineHead) + "    destinations:\n"
                                                "      - {name: ledger, kind: http, secret_env: LEDGER_SECRET}\n"),
      "config.yaml:5: pipelines.transactions.destinations[0]: missing required key 'url'");
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    destinations:\n"
                                                      "      - {name: ledger, kind: http, url: http://x/events}\n"),
            "config.yaml:5: pipelines.transactions.destinations[0]: missing required key 'secret_env'");
}

TEST(ParseConfigErrors, HttpDestinationUrlMustBeHttp) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    destinations:\n"
                                                      "      - name: ledger\n"
                                                      "        kind: http\n"
                                                      "        url: ftp://x/events\n"
                                                      "        secret_env: LEDGER_SECRET\n"),
            "config.yaml:7: pipelines.transactions.destinations[0].url: expected a URL starting with http:// or "
            "https://, got \"ftp://x/events\"");
}

TEST(ParseConfigErrors, ViewDestinationTakesOnlyNameAndKind) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    destinations:\n"
                                                      "      - name: balances\n"
                                                      "        kind: view\n"
                                                      "        url: http://x/events\n"),
            "config.yaml:7: pipelines.transactions.destinations[0].url: a view destination takes only name and kind");
}

TEST(ParseConfigErrors, UnknownDestinationKind) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    destinations: [{name: d, kind: kafka}]\n"),
            "config.yaml:4: pipelines.transactions.destinations[0].kind: expected http, view or nats, got \"kafka\"");
}

TEST(ParseConfigErrors, DuplicateDestinationNamesAcrossPipelines) {
  // Only a view may be listed by several pipelines; an http destination, or one name used
  // for both kinds, is refused.
  EXPECT_EQ(config_error("pipelines:\n"
                         "  a:\n"
                         "    source: {path: a.csv}\n"
                         "    destinations: [{name: ledger, kind: http, url: http://x/e, secret_env: S}]\n"
                         "  b:\n"
                         "    source: {path: b.csv}\n"
                         "    destinations:\n"
                         "      - {name: ledger, kind: http, url: http://x/e, secret_env: S}\n"),
            "config.yaml:8: pipelines.b.destinations[0].name: destination 'ledger' is already defined at line 4 "
            "(destination names must be unique across the file; only a view destination may be listed by several "
            "pipelines)");
  EXPECT_THAT(config_error("pipelines:\n"
                           "  a:\n"
                           "    source: {path: a.csv}\n"
                           "    destinations: [{name: account_balance, kind: view}]\n"
                           "  b:\n"
                           "    source: {path: b.csv}\n"
                           "    destinations: [{name: account_balance, kind: http, url: http://x/e, secret_env: S}]\n"),
              StartsWith("config.yaml:7: pipelines.b.destinations[0].name: destination 'account_balance' is already "
                         "defined at line 4"));
  EXPECT_EQ(config_error(std::string(kPipelineHead) +
                         "    destinations: [{name: account_balance, kind: view}, {name: account_balance, kind: view}]\n"),
            "config.yaml:4: pipelines.transactions.destinations[1]: destination 'account_balance' is listed twice in "
            "this pipeline");
}

TEST(ParseConfig, AViewDestinationMayBeListedBySeveralPipelines) {
  const Config config = parse_config(
      "pipelines:\n"
      "  orders:\n"
      "    source: {path: a.csv}\n"
      "    destinations: [{name: account_balance, kind: view}]\n"
      "  refunds:\n"
      "    source: {path: b.csv}\n"
      "    destinations: [{name: account_balance, kind: view}]\n",
      "config.yaml");
  EXPECT_EQ(config.pipelines.at("orders").destinations.at(0).name, "account_balance");
  EXPECT_EQ(config.pipelines.at("refunds").destinations.at(0).name, "account_balance");
  EXPECT_EQ(config.destinations().size(), 1u);
}

TEST(ParseConfig, DestinationNamesPerPipelineAndFeedersPerDestination) {
  const Config config = parse_config(
      "pipelines:\n"
      "  orders:\n"
      "    source: {path: a.csv}\n"
      "    destinations:\n"
      "      - {name: ledger, kind: http, url: http://127.0.0.1:9000/events, secret_env: LEDGER_SECRET}\n"
      "      - {name: account_balance, kind: view}\n"
      "  refunds:\n"
      "    source: {path: b.csv}\n"
      "    destinations: [{name: account_balance, kind: view}]\n"
      "  quiet:\n"
      "    source: {path: c.csv}\n",
      "config.yaml");
  using Names = std::vector<std::string>;
  EXPECT_EQ(config.pipelines.at("orders").destination_names(), (Names{"ledger", "account_balance"}));
  EXPECT_EQ(config.destination_names("refunds"), Names{"account_balance"});
  EXPECT_EQ(config.destination_names("quiet"), Names{});
  EXPECT_EQ(config.destination_names("not_configured"), Names{});
  EXPECT_EQ(config.pipelines_feeding("account_balance"), (Names{"orders", "refunds"}));
  EXPECT_EQ(config.pipelines_feeding("ledger"), Names{"orders"});
  EXPECT_EQ(config.pipelines_feeding("daily_totals"), Names{});
  EXPECT_EQ(config.destination_names_with(&DestinationCapabilities::view), Names{"account_balance"});
  EXPECT_EQ(config.destination_names_with(&DestinationCapabilities::windowed), Names{"ledger"});
}

TEST(ParseConfigErrors, InvalidNamesAreRejected) {
  EXPECT_THAT(config_error("pipelines:\n  bad name:\n    source: {path: a.csv}\n"),
              StartsWith("config.yaml:2: pipelines: invalid pipeline name \"bad name\""));
  EXPECT_THAT(config_error(std::string(kPipelineHead) + "    destinations: [{name: " + std::string(65, 'd') +
                           ", kind: view}]\n"),
              StartsWith("config.yaml:4: pipelines.transactions.destinations[0].name: expected a name of 1-64"));
  EXPECT_EQ(config_error("pipelines:\n  " + std::string(64, 'p') + ":\n    source: {path: a.csv}\n"), "");
}

TEST(ParseConfigErrors, BothEveryAndCron) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    schedule: {every: 5m, cron: \"* * * * *\"}\n"),
            "config.yaml:4: pipelines.transactions.schedule: expected exactly one of every (e.g. every: 5m) or cron "
            "(e.g. cron: \"*/5 * * * *\")");
}

TEST(ParseConfigErrors, CronNeedsFiveFieldsOfCronCharacters) {
  for (const auto* bad : {"* * * *", "* * * * * *", "*/5 * * * MON", "@daily"}) {
    EXPECT_THAT(config_error(std::string(kPipelineHead) + "    schedule: {cron: \"" + bad + "\"}\n"),
                StartsWith("config.yaml:4: pipelines.transactions.schedule.cron: expected five fields"))
        << bad;
  }
}

// Five fields of cron characters are not enough: the scheduler's own parser checks each
// field's range and form, so `serve` never starts with a schedule it cannot run.
TEST(ParseConfigErrors, CronFieldsAreParsedByTheSchedulersParser) {
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {"99 * * * *", "minute field '99'"}, {"* 24 * * *", "hour field '24'"},
           {"*/0 * * * *", "minute field '*/0'"}, {"* * * * 8", "day-of-week field '8'"}}) {
    EXPECT_THAT(config_error(std::string(kPipelineHead) + "    schedule: {cron: \"" + bad + "\"}\n"),
                AllOf(StartsWith("config.yaml:4: pipelines.transactions.schedule.cron: expected five fields"),
                      HasSubstr("got \"" + bad + "\" (" + why)))
        << bad;
  }
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    schedule: {cron: \"*/15 1-5 * * 1,3\"}\n"), "");
}

TEST(ParseConfigErrors, RelayMaxDelayShorterThanBaseDelay) {
  EXPECT_EQ(config_error("relay:\n  base_delay: 10s\n  max_delay: 5s\n"),
            "config.yaml:3: relay.max_delay: must not be shorter than relay.base_delay");
  EXPECT_THAT(config_error("relay:\n  base_delay: 10m\n"),
              StartsWith("config.yaml:2: relay.base_delay: must not be longer than relay.max_delay"));
}

TEST(ParseConfigErrors, RelayLimitsAreChecked) {
  EXPECT_EQ(config_error("relay: {max_attempts: 0}\n"),
            "config.yaml:1: relay.max_attempts: expected an integer from 1 to 1000, got \"0\"");
  EXPECT_EQ(config_error("relay: {max_in_flight: 1025}\n"),
            "config.yaml:1: relay.max_in_flight: expected an integer from 1 to 1024, got \"1025\"");
}

TEST(ParseConfigErrors, ADestinationsWindowIsChecked) {
  const auto with_window = [](const std::string& window) {
    return std::string(kPipelineHead) + "    destinations:\n"
                                        "      - {name: d, kind: http, url: http://x/, secret_env: S, max_in_flight: " +
           window + "}\n";
  };
  EXPECT_EQ(config_error(with_window("0")),
            "config.yaml:5: pipelines.transactions.destinations[0].max_in_flight: expected an integer from 1 to 1024, "
            "got \"0\"");
  EXPECT_EQ(config_error(with_window("32")),
            "config.yaml:5: pipelines.transactions.destinations[0].max_in_flight: is above relay.max_in_flight (16), "
            "the window of the whole relay; raise that too");
  // A relay section with errors of its own says nothing about the destination's window.
  EXPECT_EQ(config_error(with_window("32") + "relay: {max_in_flight: 64, base_delay: 10m}\n"),
            "config.yaml:6: relay.base_delay: must not be longer than relay.max_delay (5m by default)");
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    destinations: [{name: v, kind: view, max_in_flight: 4}]\n"),
            "config.yaml:4: pipelines.transactions.destinations[0].max_in_flight: a view destination takes only name "
            "and kind");
}

TEST(ParseConfigErrors, WrongTypeNamesTheKey) {
  EXPECT_EQ(config_error("http: [127.0.0.1:8080]\n"),
            "config.yaml:1: http: expected a map with keys listen, max_connections, allow_unauthenticated, allowed_hosts, "
            "got a list");
  EXPECT_EQ(config_error("database: {url: x}\n"), "config.yaml:1: database: expected a string, got a map");
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    destinations: {name: x}\n"),
            "config.yaml:4: pipelines.transactions.destinations: expected a list of destinations, got a map");
  EXPECT_EQ(config_error("- a\n- b\n"),
            "config.yaml:1: expected a map with keys database, log, http, entities, views, pipelines, relay, retention, got a "
            "list");
}

TEST(ParseConfigErrors, ListenMustBeHostAndPort) {
  for (const auto* bad : {"8080", ":8080", "localhost:http", "localhost:70000"}) {
    EXPECT_THAT(config_error(std::string("http: {listen: \"") + bad + "\"}\n"),
                StartsWith("config.yaml:1: http.listen: expected HOST:PORT"))
        << bad;
  }
}

TEST(ParseConfigErrors, SecondYamlDocumentIsRejected) {
  EXPECT_EQ(config_error("database: x\n---\nhttp: {listen: a:1}\n"),
            "config.yaml:3: a config file holds one YAML document; remove the '---'");
}

TEST(ParseConfigErrors, NullValueIsAWrongType) {
  EXPECT_EQ(config_error("database:\n"), "config.yaml:1: database: expected a string, got nothing");
}

TEST(ParseConfigErrors, SyntaxErrorNamesTheLine) {
  // yaml-cpp reports an unclosed flow map where it gave up looking: the line after it.
  EXPECT_THAT(config_error("pipelines:\n  transactions:\n    source: {path: a.csv\n    batch_size: 5\n"),
              StartsWith("config.yaml:4: YAML syntax error: "));
  EXPECT_THAT(config_error("database: x\nhttp: {listen: [\n"), HasSubstr("YAML syntax error"));
  EXPECT_THAT(config_error("database: x\nhttp:\n  listen: a\n   bad: indentation\n"),
              AllOf(StartsWith("config.yaml:4: YAML syntax error: "), HasSubstr("map")));
}

// A valid entity to which tests append one faulty line or block.
constexpr const char* kEntityHead =
    "entities:\n"               // 1
    "  orders:\n"               // 2
    "    key: order_id\n"       // 3
    "    revision: version\n";  // 4

TEST(ParseEntities, TheInterfaceExampleParsesIntoItsDeclaration) {
  const Config config = parse_config(R"(entities:
  orders:                          # name: [a-z][a-z0-9_]{0,47}
    table: orders                  # optional, default the name; same rule; not a Tidemark table
    key: order_id
    revision: version
    partition_by: customer_id
    extra_fields: ignore
    fields:
      customer_id: {type: text, required: true, max_length: 64}
      amount:      {type: decimal, precision: 14, scale: 4, required: true}
      currency:    {type: text, required: true, max_length: 3}
      placed_at:   {type: timestamp}
      quantity:    {type: integer}
      paid:        {type: boolean}
      ship_date:   {type: date}
      meta:        {type: json}
pipelines:
  orders_daily:
    entity: orders
    source: {kind: file, path: data/orders, format: jsonl}
  transactions:
    source: {path: data/in.csv}
)",
                                     "config.yaml");
  ASSERT_EQ(config.entities.size(), 1u);
  const EntityDeclaration& orders = config.entities.at("orders");
  EXPECT_EQ(orders.name, "orders");
  EXPECT_EQ(orders.table, "orders");
  EXPECT_EQ(orders.key, "order_id");
  EXPECT_EQ(orders.revision, "version");
  EXPECT_EQ(orders.partition_by, "customer_id");
  EXPECT_EQ(orders.extra_fields, ExtraFields::kIgnore);
  // In the order declared: the table's columns and the payload's fields follow it.
  // With the line of each field's name, for messages after parsing.
  const std::vector<FieldSpec> fields{
      {.name = "customer_id", .type = FieldType::kText, .required = true, .max_length = 64, .line = 9},
      {.name = "amount", .type = FieldType::kDecimal, .required = true, .precision = 14, .scale = 4, .line = 10},
      {.name = "currency", .type = FieldType::kText, .required = true, .max_length = 3, .line = 11},
      {.name = "placed_at", .type = FieldType::kTimestamp, .line = 12},
      {.name = "quantity", .type = FieldType::kInteger, .line = 13},
      {.name = "paid", .type = FieldType::kBoolean, .line = 14},
      {.name = "ship_date", .type = FieldType::kDate, .line = 15},
      {.name = "meta", .type = FieldType::kJson, .line = 16},
  };
  EXPECT_EQ(orders.fields, fields);
  EXPECT_EQ(orders.lines, (EntityDeclaration::Lines{.name = 2, .key = 4, .revision = 5, .extra_fields = 7}));

  EXPECT_EQ(config.pipelines.at("orders_daily").entity, "orders");
  EXPECT_EQ(&config.entity_of("orders_daily"), &orders);
  EXPECT_EQ(config.pipelines.at("transactions").entity, "transaction");
  EXPECT_EQ(&config.entity_of("transactions"), &built_in_transaction_entity());
  EXPECT_EQ(&config.entity("transaction"), &built_in_transaction_entity());
  EXPECT_THROW(config.entity("invoices"), std::out_of_range);
  EXPECT_EQ(config.find_entity("orders"), &orders);
  EXPECT_EQ(config.find_entity("transaction"), &built_in_transaction_entity());
  EXPECT_EQ(config.find_entity("invoices"), nullptr);
}

TEST(ParseEntities, OmittedKeysTakeTheirDefaults) {
  const Config config = parse_config(std::string(kEntityHead) +
                                         "    fields:\n"
                                         "      note: {type: text}\n"
                                         "      price: {type: decimal, precision: 10}\n"
                                         "    extra_fields: keep\n"
                                         "  events:\n"
                                         "    key: id\n"
                                         "    revision: rev\n",
                                     "config.yaml");
  const EntityDeclaration& orders = config.entities.at("orders");
  EXPECT_EQ(orders.table, "orders");           // the name
  EXPECT_EQ(orders.partition_by, "order_id");  // the key
  EXPECT_EQ(orders.extra_fields, ExtraFields::kKeep);
  const std::vector<FieldSpec> fields{
      {.name = "note", .type = FieldType::kText, .required = false, .max_length = kDefaultMaxTextLength, .line = 6},
      {.name = "price", .type = FieldType::kDecimal, .precision = 10, .scale = 0, .line = 7},
  };
  EXPECT_EQ(orders.fields, fields);
  const EntityDeclaration& events = config.entities.at("events");
  EXPECT_EQ(events.extra_fields, ExtraFields::kIgnore);
  // No extra_fields: to point at, so a message about `extra` names the entity's line.
  EXPECT_EQ(events.lines, (EntityDeclaration::Lines{.name = 9, .key = 10, .revision = 11, .extra_fields = 9}));
  EXPECT_TRUE(events.fields.empty());  // a key and a revision alone are an entity
  EXPECT_TRUE(parse_config("", "config.yaml").entities.empty());
}

// `tidemark check` names a field's line when its table's column does not match: the line of
// the field's name, whichever way its rules are written, as the parser's own errors do.
TEST(ParseEntities, EachFieldKeepsTheLineOfItsName) {
  const Config config = parse_config(std::string(kEntityHead) +
                                         "    fields:\n"                // 5
                                         "      # a comment\n"          // 6
                                         "      amount:\n"              // 7
                                         "        type: decimal\n"      // 8
                                         "        precision: 14\n"      // 9
                                         "\n"                           // 10
                                         "      note: {type: text}\n",  // 11
                                     "config.yaml");
  const EntityDeclaration& orders = config.entities.at("orders");
  ASSERT_NE(orders.field("amount"), nullptr);
  EXPECT_EQ(orders.field("amount")->line, 7);
  ASSERT_NE(orders.field("note"), nullptr);
  EXPECT_EQ(orders.field("note")->line, 11);
  // A declaration not read from a file has none.
  EXPECT_EQ(built_in_transaction_entity().fields.front().line, 0);
}

TEST(ParseEntitiesErrors, UnknownKeysNameLineAndPath) {
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    tabel: orders\n"),
            "config.yaml:5: unknown key 'tabel' in entities.orders "
            "(expected one of: table, key, revision, partition_by, extra_fields, fields)");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      currency: {type: text, length: 3}\n"),
            "config.yaml:6: unknown key 'length' in entities.orders.fields.currency "
            "(expected one of: type, required, max_length, precision, scale)");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      a: {type: text}\n      a: {type: date}\n"),
            "config.yaml:7: duplicate key 'a' in entities.orders.fields");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "  orders:\n    key: k\n    revision: r\n"),
            "config.yaml:5: duplicate key 'orders' in entities");
}

TEST(ParseEntitiesErrors, MissingKeyOrRevisionNamesTheEntity) {
  EXPECT_EQ(config_error("entities:\n  orders:\n    revision: version\n"),
            "config.yaml:3: entities.orders: missing required key 'key'");
  EXPECT_EQ(config_error("entities:\n  orders:\n    key: order_id\n"),
            "config.yaml:3: entities.orders: missing required key 'revision'");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      note: {required: true}\n"),
            "config.yaml:6: entities.orders.fields.note: missing required key 'type'");
}

TEST(ParseEntitiesErrors, WrongTypesNameTheKey) {
  EXPECT_EQ(config_error("entities: [orders]\n"),
            "config.yaml:1: entities: expected a map from entity name to its declaration, got a list");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields: [note]\n"),
            "config.yaml:5: entities.orders.fields: expected a map from field name to its type and rules, got a list");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      note: {type: money}\n"),
            "config.yaml:6: entities.orders.fields.note.type: expected text, integer, decimal, timestamp, date, "
            "boolean or json, got \"money\"");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      note: {type: text, required: yes}\n"),
            "config.yaml:6: entities.orders.fields.note.required: expected true or false, got \"yes\"");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      note: {type: text, max_length: ten}\n"),
            "config.yaml:6: entities.orders.fields.note.max_length: expected a whole number, got \"ten\"");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    extra_fields: drop\n"),
            "config.yaml:5: entities.orders.extra_fields: expected ignore, reject or keep, got \"drop\"");
  EXPECT_EQ(config_error("entities:\n  orders:\n    key: {name: order_id}\n    revision: version\n"),
            "config.yaml:3: entities.orders.key: expected a string, got a map");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      note: text\n"),
            "config.yaml:6: entities.orders.fields.note: expected a map with keys type, required, max_length, "
            "precision, scale, got \"text\"");
}

TEST(ParseEntitiesErrors, EachRuleBelongsToItsType) {
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      quantity: {type: integer, max_length: 5}\n"),
            "config.yaml:6: entities.orders.fields.quantity.max_length: applies to text fields only");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      note: {type: text, precision: 5}\n"),
            "config.yaml:6: entities.orders.fields.note.precision: applies to decimal fields only");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      quantity:\n        type: integer\n"
                                                    "        scale: 2\n"),
            "config.yaml:8: entities.orders.fields.quantity.scale: applies to decimal fields only");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      price: {type: decimal, scale: 2}\n"),
            "config.yaml:6: entities.orders.fields.price: a decimal field needs a precision (1 to 38), e.g. "
            "{type: decimal, precision: 12, scale: 2}");
}

TEST(ParseEntitiesErrors, RangesOfPrecisionScaleAndMaxLengthNameTheirLine) {
  const auto field = [](const std::string& rules) {
    return config_error(std::string(kEntityHead) + "    fields:\n      price:\n" + rules);
  };
  EXPECT_EQ(field("        type: decimal\n        precision: 39\n"),
            "config.yaml:8: entities.orders.fields.price.precision: precision 39 is out of range (1 to 38)");
  EXPECT_EQ(field("        type: decimal\n        precision: 0\n"),
            "config.yaml:8: entities.orders.fields.price.precision: precision 0 is out of range (1 to 38)");
  EXPECT_EQ(field("        type: decimal\n        precision: 4\n        scale: 5\n"),
            "config.yaml:9: entities.orders.fields.price.scale: scale 5 is out of range (0 to the precision, 4)");
  EXPECT_EQ(field("        type: decimal\n        precision: -4\n"),
            "config.yaml:8: entities.orders.fields.price.precision: expected a whole number, got \"-4\"");
  EXPECT_EQ(field("        type: text\n        max_length: 0\n"),
            "config.yaml:8: entities.orders.fields.price.max_length: max_length must be at least 1");
  EXPECT_EQ(field("        type: decimal\n        precision: 38\n        scale: 38\n"), "");
}

TEST(ParseEntitiesErrors, BadNamesNameTheirLine) {
  EXPECT_THAT(config_error("entities:\n  Orders:\n    key: order_id\n    revision: version\n"),
              StartsWith("config.yaml:2: entities.Orders: entity name 'Orders' is not a plain name"));
  EXPECT_THAT(config_error("entities:\n  " + std::string(49, 'o') + ":\n    key: k\n    revision: r\n"),
              StartsWith("config.yaml:2: entities." + std::string(49, 'o') + ": entity name"));
  EXPECT_THAT(config_error(std::string(kEntityHead) + "    table: Orders\n"),
              StartsWith("config.yaml:5: entities.orders.table: table name 'Orders' is not a plain identifier"));
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    table: tidemark_orders\n"),
            "config.yaml:5: entities.orders.table: table name 'tidemark_orders' starts with tidemark_ (reserved for "
            "Tidemark's own tables and columns)");
  EXPECT_THAT(config_error("entities:\n  orders:\n    key: order-id\n    revision: version\n"),
              StartsWith("config.yaml:3: entities.orders.key: key field name 'order-id' is not a plain identifier"));
  EXPECT_THAT(config_error("entities:\n  orders:\n    key: order_id\n    revision: Version\n"),
              StartsWith("config.yaml:4: entities.orders.revision: revision field name 'Version' is not a plain"));
  EXPECT_THAT(config_error(std::string(kEntityHead) + "    fields:\n      unit price: {type: text}\n"),
              StartsWith("config.yaml:6: entities.orders.fields.unit price: field name 'unit price' is not a plain"));
  EXPECT_THAT(config_error(std::string(kEntityHead) + "    fields:\n      tidemark_pipeline: {type: text}\n"),
              StartsWith("config.yaml:6: entities.orders.fields.tidemark_pipeline: field name 'tidemark_pipeline' "
                         "starts with tidemark_"));
}

TEST(ParseEntitiesErrors, ReservedTablesAndTheBuiltInNameAreRefused) {
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    table: outbox\n"),
            "config.yaml:5: entities.orders.table: table name 'outbox' is reserved for Tidemark's own tables");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    table: account_balance_v2\n"),
            "config.yaml:5: entities.orders.table: table name 'account_balance_v2' is reserved for Tidemark's own "
            "tables");
  // Without table:, the name is the table: the error points at the name.
  EXPECT_EQ(config_error("entities:\n  checkpoint:\n    key: k\n    revision: r\n"),
            "config.yaml:2: entities.checkpoint: table name 'checkpoint' is reserved for Tidemark's own tables");
  EXPECT_EQ(config_error("entities:\n  transaction:\n    key: k\n    revision: r\n    table: transactions\n"),
            "config.yaml:2: entities.transaction: 'transaction' is the built-in entity (a pipeline without entity: "
            "loads it); declare yours under another name");
}

TEST(ParseEntitiesErrors, FieldsMayNotRepeatTheKeyTheRevisionOrExtra) {
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      note: {type: text}\n"
                                                    "      order_id: {type: text}\n"),
            "config.yaml:7: entities.orders.fields.order_id: 'order_id' is the key field (key and revision are not "
            "listed in fields)");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    fields:\n      version: {type: integer}\n"),
            "config.yaml:6: entities.orders.fields.version: 'version' is the revision field (key and revision are "
            "not listed in fields)");
  const std::string extra_field = "    fields:\n      extra: {type: json}\n";
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    extra_fields: keep\n" + extra_field),
            "config.yaml:7: entities.orders.fields.extra: 'extra' is the column of kept undeclared fields "
            "(extra_fields: keep)");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "    extra_fields: reject\n" + extra_field), "");
  EXPECT_EQ(config_error("entities:\n  orders:\n    key: order_id\n    revision: order_id\n"),
            "config.yaml:4: entities.orders.revision: 'order_id' is the key field too");
}

TEST(ParseEntitiesErrors, PartitionByNamesTheKeyOrATextOrIntegerField) {
  const std::string fields = "    fields:\n      amount: {type: decimal, precision: 12, scale: 2}\n"
                             "      customer: {type: integer}\n";
  EXPECT_EQ(config_error(std::string(kEntityHead) + fields + "    partition_by: amount\n"),
            "config.yaml:8: entities.orders.partition_by: 'amount' is a decimal field (expected the key or a text or "
            "integer field)");
  EXPECT_EQ(config_error(std::string(kEntityHead) + fields + "    partition_by: region\n"),
            "config.yaml:8: entities.orders.partition_by: 'region' is not a declared field (expected the key or a "
            "text or integer field)");
  EXPECT_EQ(config_error(std::string(kEntityHead) + fields + "    partition_by: version\n"),
            "config.yaml:8: entities.orders.partition_by: 'version' is the revision field (expected the key or a "
            "text or integer field)");
  EXPECT_EQ(config_error(std::string(kEntityHead) + fields + "    partition_by: customer\n"), "");
  EXPECT_EQ(config_error(std::string(kEntityHead) + fields + "    partition_by: order_id\n"), "");
}

TEST(ParseEntitiesErrors, TwoEntitiesMayNotShareATable) {
  EXPECT_EQ(config_error(std::string(kEntityHead) + "  sales:\n    key: k\n    revision: r\n    table: orders\n"),
            "config.yaml:8: entities.sales.table: table 'orders' is already the table of entity 'orders' (two "
            "entities may not share a table)");
  // A table given by default (the entity's name) clashes too, at the entity's name.
  EXPECT_EQ(config_error("entities:\n  sales:\n    key: k\n    revision: r\n    table: orders\n" +
                         std::string(kEntityHead).substr(std::string("entities:\n").size())),
            "config.yaml:6: entities.orders: table 'orders' is already the table of entity 'sales' (two entities may "
            "not share a table)");
}

TEST(ParseEntitiesErrors, APipelineNamesADeclaredEntityOrTheBuiltInOne) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    entity: orders\n"),
            "config.yaml:4: pipelines.transactions.entity: unknown entity 'orders' (none is declared under entities; "
            "transaction is the built-in one)");
  EXPECT_EQ(config_error(std::string(kEntityHead) + "  sales:\n    key: k\n    revision: r\n" + kPipelineHead +
                         "    entity: order\n"),
            "config.yaml:11: pipelines.transactions.entity: unknown entity 'order' (declared: orders, sales; "
            "transaction is the built-in one)");
  // Wherever the file declares it: entities after the pipelines are found too.
  const Config config = parse_config(std::string(kPipelineHead) + "    entity: orders\n" + kEntityHead, "config.yaml");
  EXPECT_EQ(config.entity_of("transactions").name, "orders");
  EXPECT_EQ(parse_config(std::string(kPipelineHead) + "    entity: transaction\n", "config.yaml")
                .entity_of("transactions")
                .table,
            "transaction_state");
}

TEST(ParseEntitiesErrors, AViewDestinationOnAnotherEntityIsRefused) {
  EXPECT_EQ(config_error(std::string(kEntityHead) + kPipelineHead +
                         "    entity: orders\n"
                         "    destinations:\n"
                         "      - {name: ledger, kind: http, url: http://x/e, secret_env: S}\n"
                         "      - name: account_balance\n"
                         "        kind: view\n"),
            "config.yaml:12: pipelines.transactions.destinations[1].kind: a view destination reads the built-in "
            "transaction entity; this pipeline loads entity 'orders' (use an http destination)");
  EXPECT_EQ(config_error(std::string(kEntityHead) + kPipelineHead +
                         "    entity: transaction\n"
                         "    destinations: [{name: account_balance, kind: view}]\n"),
            "");
}

TEST(LoadConfig, ReadsTheFileAndNamesItInErrors) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "tidemark_config_test.yaml";
  {
    std::ofstream out(path);
    out << "pipelines:\n  p:\n    source: {path: a.csv}\n    batch_size: x\n";
  }
  try {
    load_config(path);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.what(), StartsWith(path.string() + ":4: pipelines.p.batch_size:"));
  }
  std::filesystem::remove(path);
}

TEST(LoadConfig, CronOutOfRangeNamesTheFileLineAndKey) {
  const auto path = std::filesystem::path(::testing::TempDir()) / "tidemark_config_cron_test.yaml";
  {
    std::ofstream out(path);
    out << "pipelines:\n  p:\n    source: {path: a.csv}\n    schedule: {cron: \"99 * * * *\"}\n";
  }
  try {
    load_config(path);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.what(), StartsWith(path.string() + ":4: pipelines.p.schedule.cron: expected five fields"));
    EXPECT_THAT(error.what(), HasSubstr("minute field '99'"));
  }
  std::filesystem::remove(path);
}

TEST(LoadConfig, UnreadableFileNamesThePath) {
  try {
    load_config("/nonexistent/tidemark.yaml");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.what(), HasSubstr("/nonexistent/tidemark.yaml"));
  }
}

TEST(ParseDuration, AcceptsAnIntegerWithAUnit) {
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration("1s"), seconds(1));
  EXPECT_EQ(parse_duration("5m"), minutes(5));
  EXPECT_EQ(parse_duration("2h"), hours(2));
  EXPECT_EQ(parse_duration("0s"), milliseconds(0));
  EXPECT_EQ(parse_duration("007s"), seconds(7));
}

TEST(ParseDuration, RejectsEverythingElse) {
  for (const auto* bad : {"", "5", "ms", "s", "1.5s", "-1s", "+1s", " 1s", "1s ", "1 s", "1sec", "1d", "1S", "1m30s",
                          "1e3ms", "0x10s", "9223372036854775808ms", "99999999999999999999h", "2562047788016h"}) {
    EXPECT_EQ(parse_duration(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(ParseDuration, AcceptsTheLargestRepresentableValue) {
  EXPECT_EQ(parse_duration("9223372036854775807ms"), milliseconds(9223372036854775807LL));
  EXPECT_EQ(parse_duration("2562047788015h"), hours(2562047788015));
}

TEST(FormatDuration, TheLargestUnitThatDividesIt) {
  EXPECT_EQ(format_duration(hours(168)), "168h");
  EXPECT_EQ(format_duration(minutes(90)), "90m");
  EXPECT_EQ(format_duration(seconds(61)), "61s");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_duration(milliseconds(0)), "0ms");
  for (const auto* text : {"168h", "90m", "61s", "1500ms"}) EXPECT_EQ(format_duration(*parse_duration(text)), text);
}

// --- every error at once ----------------------------------------------------------------

// The errors a ConfigError carries, one per line of what().
std::vector<std::string> config_errors(const std::string& yaml) {
  try {
    parse_config(yaml, "config.yaml");
  } catch (const ConfigError& error) {
    return error.errors();
  }
  return {};
}

TEST(ParseConfigErrors, EveryErrorOfTheFileIsReportedInLineOrder) {
  // Sections are read in a fixed order (relay after pipelines), errors come in the file's.
  const std::string yaml =
      "relay: {max_attempts: 0}\n"                              // 1
      "pipelines:\n"                                            // 2
      "  orders:\n"                                             // 3
      "    source: {path: a.csv, format: xml}\n"                // 4
      "    batch_size: ten\n"                                   // 5
      "    schedule: {cron: \"99 * * * *\"}\n"                  // 6
      "    colour: blue\n"                                      // 7
      "    destinations:\n"                                     // 8
      "      - {name: ledger, kind: http, url: ftp://x/e, secret_env: S}\n"  // 9
      "      - {name: d, kind: kafka}\n"                        // 10
      "  refunds:\n"                                            // 11
      "    source: {path: b.csv}\n"                             // 12
      "    batch_size: 0\n"                                     // 13
      "http: {listen: nowhere, max_connections: 0}\n"           // 14
      "retention: {inbox: forever}\n";                          // 15
  const auto errors = config_errors(yaml);
  ASSERT_EQ(errors.size(), 11u) << ::testing::PrintToString(errors);
  const std::vector<std::string> starts = {
      "config.yaml:1: relay.max_attempts:",
      "config.yaml:4: pipelines.orders.source.format:",
      "config.yaml:5: pipelines.orders.batch_size:",
      "config.yaml:6: pipelines.orders.schedule.cron:",
      "config.yaml:7: unknown key 'colour' in pipelines.orders",
      "config.yaml:9: pipelines.orders.destinations[0].url:",
      "config.yaml:10: pipelines.orders.destinations[1].kind:",
      "config.yaml:13: pipelines.refunds.batch_size:",
      "config.yaml:14: http.listen:",
      "config.yaml:14: http.max_connections:",
      "config.yaml:15: retention.inbox:"};
  for (std::size_t i = 0; i < starts.size(); ++i) EXPECT_THAT(errors[i], StartsWith(starts[i])) << i;
  // what() is every error, one per line: what run, serve and the others print.
  std::string joined;
  for (const auto& error : errors) joined += (joined.empty() ? "" : "\n") + error;
  EXPECT_EQ(config_error(yaml), joined);
}

TEST(CheckConfig, ReturnsTheErrorsAndEveryPartThatParsed) {
  const auto check = check_config(
      "pipelines:\n"
      "  good:\n"
      "    source: {path: a.csv}\n"
      "    destinations: [{name: account_balance, kind: view}]\n"
      "  bad:\n"
      "    source: {path: b.csv}\n"
      "    batch_size: -1\n"
      "    destinations: [{name: ledger, kind: http, url: http://x/e, secret_env: LEDGER_SECRET}]\n"
      "relay: {max_attempts: 3}\n",
      "config.yaml");
  ASSERT_EQ(check.errors.size(), 1u);
  EXPECT_THAT(check.errors[0], StartsWith("config.yaml:7: pipelines.bad.batch_size:"));
  EXPECT_EQ(check.config.relay.max_attempts, 3);
  EXPECT_EQ(check.config.pipelines.at("good").destination_names(), std::vector<std::string>{"account_balance"});
  // A pipeline with an error keeps its other keys (at the failed key's default).
  ASSERT_EQ(check.config.pipelines.count("bad"), 1u);
  EXPECT_EQ(check.config.pipelines.at("bad").batch_size, 10000u);
  EXPECT_EQ(check.config.pipelines.at("bad").destinations.at(0).line, 8);
  EXPECT_EQ(check.config.pipelines.at("good").destinations.at(0).line, 4);
  EXPECT_TRUE(check_config(kPipelineHead, "config.yaml").errors.empty());
}

// One mistake, one error: what follows from an error already reported is not reported again.
TEST(ParseConfigErrors, AnErrorIsNotFollowedByItsConsequences) {
  // A misspelt required key is the unknown key, not also a missing one.
  EXPECT_EQ(config_errors("pipelines:\n  p:\n    sorce: {path: a.csv}\n"),
            std::vector<std::string>{"config.yaml:3: unknown key 'sorce' in pipelines.p (expected one of: entity, "
                                     "source, batch_size, max_batch_bytes, max_rejected, schedule, destinations)"});
  // An entity declared with an error is not "unknown" to the pipeline that names it.
  const auto entity_errors = config_errors(std::string(kEntityHead) + "    partition_by: nowhere\n" + kPipelineHead +
                                           "    entity: orders\n");
  ASSERT_EQ(entity_errors.size(), 1u) << ::testing::PrintToString(entity_errors);
  EXPECT_THAT(entity_errors[0], StartsWith("config.yaml:5: entities.orders.partition_by:"));
  // A bad base_delay is not also compared with max_delay.
  EXPECT_EQ(config_errors("relay: {base_delay: 1.5s, max_delay: 1s}\n").size(), 1u);
  // An unset variable is its error, not also "expected a URL".
  ::unsetenv("TIDEMARK_TEST_UNSET_URL");
  const auto url_errors = config_errors(std::string(kPipelineHead) +
                                        "    destinations:\n"
                                        "      - {name: l, kind: http, url: \"${TIDEMARK_TEST_UNSET_URL}\", "
                                        "secret_env: S}\n");
  ASSERT_EQ(url_errors.size(), 1u) << ::testing::PrintToString(url_errors);
  EXPECT_THAT(url_errors[0], HasSubstr("TIDEMARK_TEST_UNSET_URL is not set"));
}

TEST(ParseConfigErrors, CronThatNeverMatchesIsRefusedAsTheSchedulerWould) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    schedule: {cron: \"0 0 30 2 *\"}\n"),
            "config.yaml:4: pipelines.transactions.schedule.cron: \"0 0 30 2 *\" never matches (no such day in the "
            "months it names)");
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    schedule: {cron: \"0 0 29 2 *\"}\n"), "");
}

// --- ${VAR} interpolation -------------------------------------------------------------------

// Sets (or, with nullptr, removes) an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

TEST(Interpolation, VariablesAndDefaultsInAnyValue) {
  const ScopedEnv dir("TIDEMARK_TEST_DIR", "/data/in");
  const ScopedEnv size("TIDEMARK_TEST_BATCH", "250");
  const ScopedEnv empty("TIDEMARK_TEST_EMPTY", "");
  const ScopedEnv unset("TIDEMARK_TEST_UNSET", nullptr);
  const Config config = parse_config(
      "database: \"${TIDEMARK_TEST_UNSET:-postgresql://localhost/tm}\"\n"
      "pipelines:\n"
      "  p:\n"
      "    source: {path: \"${TIDEMARK_TEST_DIR}/${TIDEMARK_TEST_EMPTY:-today}.csv\"}\n"
      "    batch_size: ${TIDEMARK_TEST_BATCH}\n"
      "    destinations:\n"
      "      - name: ledger\n"
      "        kind: http\n"
      "        url: http://${TIDEMARK_TEST_UNSET:-127.0.0.1:9000}/events${TIDEMARK_TEST_EMPTY}\n"
      "        secret_env: LEDGER_SECRET\n",
      "config.yaml");
  EXPECT_EQ(config.database, "postgresql://localhost/tm");  // the default when unset
  const auto& pipeline = config.pipelines.at("p");
  EXPECT_EQ(file_of(pipeline.source).path, "/data/in/today.csv");  // the default when empty, as in the shell
  EXPECT_EQ(pipeline.batch_size, 250u);                    // a number too: the value is read after interpolation
  EXPECT_EQ(pipeline.destinations.at(0).get_if<connectors::http::HttpDestinationOptions>()->url,
            "http://127.0.0.1:9000/events");  // set but empty, no default: ""
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    batch_size: \"${TIDEMARK_TEST_DIR}\"\n"),
            "config.yaml:4: pipelines.transactions.batch_size: expected a positive integer (at most 1000000), "
            "got \"/data/in\"");
}

TEST(Interpolation, DollarDollarBraceIsALiteralAndOtherDollarsAreThemselves) {
  const ScopedEnv value("TIDEMARK_TEST_X", "x");
  const auto path_of = [](const std::string& path) {
    return file_of(parse_config("pipelines:\n  p:\n    source: {path: '" + path + "', format: csv}\n", "config.yaml")
                       .pipelines.at("p")
                       .source)
        .path;
  };
  EXPECT_EQ(path_of("$${TIDEMARK_TEST_X}"), "${TIDEMARK_TEST_X}");
  EXPECT_EQ(path_of("a$$${TIDEMARK_TEST_X}"), "a$${TIDEMARK_TEST_X}");  // `$` then `$${`: both kept as written
  EXPECT_EQ(path_of("$HOME/$1/50$/$$"), "$HOME/$1/50$/$$");
  EXPECT_EQ(path_of("${TIDEMARK_TEST_X}$${TIDEMARK_TEST_X}"), "x${TIDEMARK_TEST_X}");
  // One pass: a value brought in is not interpolated again.
  const ScopedEnv nested("TIDEMARK_TEST_NESTED", "${TIDEMARK_TEST_X}");
  EXPECT_EQ(path_of("${TIDEMARK_TEST_NESTED}"), "${TIDEMARK_TEST_X}");
}

TEST(Interpolation, AnUnsetVariableWithoutDefaultNamesItAndTheLine) {
  const ScopedEnv unset("TIDEMARK_TEST_MISSING", nullptr);
  EXPECT_EQ(config_error("pipelines:\n  p:\n    source:\n      path: ${TIDEMARK_TEST_MISSING}/in.csv\n"),
            "config.yaml:4: pipelines.p.source.path: environment variable TIDEMARK_TEST_MISSING is not set (set it, "
            "or give a default: ${TIDEMARK_TEST_MISSING:-VALUE})");
  // Each value is its own error.
  const auto errors = config_errors("database: ${TIDEMARK_TEST_MISSING}\npipelines:\n  p:\n"
                                    "    source: {path: \"${TIDEMARK_TEST_MISSING}.csv\"}\n");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_THAT(errors[0], StartsWith("config.yaml:1: database: environment variable TIDEMARK_TEST_MISSING"));
  EXPECT_THAT(errors[1], StartsWith("config.yaml:4: pipelines.p.source.path: environment variable"));
}

TEST(Interpolation, MalformedReferencesSayHowToWriteThem) {
  EXPECT_EQ(config_error("database: \"${TIDEMARK_TEST_X\"\n"),
            "config.yaml:1: database: '${TIDEMARK_TEST_X' has no closing '}' (expected ${NAME} or "
            "${NAME:-default}; write $${ for a literal ${)");
  for (const auto* bad : {"${}", "${1X}", "${A B}", "${X:default}", "${X-default}"}) {
    EXPECT_THAT(config_error(std::string("database: \"") + bad + "\"\n"),
                AllOf(StartsWith(std::string("config.yaml:1: database: '") + bad + "' is not ${NAME} or"),
                      HasSubstr("write $${ for a literal ${")))
        << bad;
  }
}

TEST(Interpolation, KeysAreNotInterpolated) {
  const ScopedEnv value("TIDEMARK_TEST_KEY", "batch_size");
  EXPECT_THAT(config_error(std::string(kPipelineHead) + "    ${TIDEMARK_TEST_KEY}: 5\n"),
              StartsWith("config.yaml:4: unknown key '${TIDEMARK_TEST_KEY}'"));
}

// --- retention.inbox and names --------------------------------------------------------------

TEST(ParseConfig, RetentionOfTheInbox) {
  EXPECT_EQ(parse_config(kPipelineHead, "config.yaml").retention.inbox, hours(168));
  EXPECT_EQ(parse_config("retention: {inbox: 72h, requests: 1h}\n", "config.yaml").retention.inbox, hours(72));
  EXPECT_THAT(config_error("retention:\n  inbox: 0h\n"),
              StartsWith("config.yaml:2: retention.inbox: expected a positive duration"));
  EXPECT_EQ(config_error("retention: {outbox_rows: 1h}\n"),
            "config.yaml:1: unknown key 'outbox_rows' in retention (expected one of: outbox, runs, quarantine, "
            "requests, inbox)");
}

TEST(ParseConfig, RetentionOfOutboxRunsAndQuarantine) {
  const auto defaults = parse_config(kPipelineHead, "config.yaml");
  EXPECT_EQ(defaults.retention.outbox, hours(24 * 7));
  EXPECT_EQ(defaults.retention.runs, hours(24 * 90));
  EXPECT_EQ(defaults.retention.quarantine, hours(24 * 30));
  const auto config = parse_config("retention: {outbox: 48h, runs: 720h, quarantine: 5m}\n", "config.yaml");
  EXPECT_EQ(config.retention.outbox, hours(48));
  EXPECT_EQ(config.retention.runs, hours(720));
  EXPECT_EQ(config.retention.quarantine, std::chrono::minutes(5));
  EXPECT_THAT(config_error("retention:\n  outbox: 7d\n  runs: 0h\n  quarantine: soon\n"),
              StartsWith("config.yaml:2: retention.outbox: expected a positive duration"));
  EXPECT_THAT(config_error("retention:\n  runs: 0h\n"),
              StartsWith("config.yaml:2: retention.runs: expected a positive duration"));
  EXPECT_THAT(config_error("retention:\n  quarantine: soon\n"),
              StartsWith("config.yaml:2: retention.quarantine: expected a positive duration"));
}

TEST(ParseConfig, LogSectionIsReadAndChecked) {
  const auto defaults = parse_config(kPipelineHead, "config.yaml");
  EXPECT_FALSE(defaults.log.level);
  EXPECT_FALSE(defaults.log.format);
  const auto config = parse_config("log: {level: debug, format: json}\n", "config.yaml");
  EXPECT_EQ(config.log.level, "debug");
  EXPECT_EQ(config.log.format, "json");
  EXPECT_EQ(parse_config("log: {format: text}\n", "config.yaml").log.level, std::nullopt);
  EXPECT_EQ(config_error("log:\n  level: warning\n"),
            "config.yaml:2: log.level: expected one of trace, debug, info, warn, error, got \"warning\"");
  EXPECT_EQ(config_error("log: {format: yaml}\n"),
            "config.yaml:1: log.format: expected one of text, json, got \"yaml\"");
  EXPECT_EQ(config_error("log: {colour: true}\n"),
            "config.yaml:1: unknown key 'colour' in log (expected one of: level, format)");
  // Collected with the file's other errors, as `tidemark check` reports them.
  const auto check = check_config("log: {level: loud, format: xml}\nrelay: {max_attempts: 0}\n", "config.yaml");
  ASSERT_EQ(check.errors.size(), 3u);
  EXPECT_THAT(check.errors[0], StartsWith("config.yaml:1: log.level:"));
  EXPECT_THAT(check.errors[1], StartsWith("config.yaml:1: log.format:"));
  EXPECT_THAT(check.errors[2], StartsWith("config.yaml:2: relay.max_attempts:"));
}

TEST(IsValidName, TheRuleOfPipelineAndDestinationNames) {
  for (const auto* good : {"p", "orders_2024", "A-b_C", "x"}) EXPECT_TRUE(is_valid_name(good)) << good;
  EXPECT_TRUE(is_valid_name(std::string(64, 'p')));
  for (const auto* bad : {"", "bad name", "a.b", "ä", "a/b", "--x;"}) EXPECT_FALSE(is_valid_name(bad)) << bad;
  EXPECT_FALSE(is_valid_name(std::string(65, 'p')));
}

TEST(LoadConfig, ADirectoryIsNamedAsOne) {
  const auto folder = std::filesystem::path(::testing::TempDir());
  try {
    load_config(folder);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.what(), AllOf(HasSubstr(folder.string()), HasSubstr("is a directory, not a YAML file")));
  }
  EXPECT_THROW(check_config_file(folder), ConfigError);
}

}  // namespace
}  // namespace tidemark::app::config
