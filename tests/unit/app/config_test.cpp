#include "app/config/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <utility>
#include <vector>

namespace tidemark::pipeline {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The message of the ConfigError that parsing `yaml` throws ("" when it parses).
std::string config_error(const std::string& yaml) {
  try {
    parse_config(yaml, "config.yaml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

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
  EXPECT_EQ(transactions.source.kind, SourceKind::kFile);
  EXPECT_EQ(transactions.source.path, "data/in");
  EXPECT_EQ(transactions.source.format, Format::kCsv);
  EXPECT_EQ(transactions.batch_size, 500u);
  ASSERT_TRUE(transactions.schedule.has_value());
  EXPECT_EQ(transactions.schedule->every, minutes(5));
  EXPECT_FALSE(transactions.schedule->cron.has_value());
  ASSERT_EQ(transactions.destinations.size(), 2u);
  EXPECT_EQ(transactions.destinations[0].name, "ledger");
  EXPECT_EQ(transactions.destinations[0].kind, DestinationKind::kHttp);
  EXPECT_EQ(transactions.destinations[0].url, "http://127.0.0.1:9000/events");
  EXPECT_EQ(transactions.destinations[0].secret_env, "LEDGER_SECRET");
  EXPECT_EQ(transactions.destinations[1].name, "balances");
  EXPECT_EQ(transactions.destinations[1].kind, DestinationKind::kView);
  EXPECT_EQ(transactions.destinations[1].url, "");

  const auto& refunds = config.pipelines.at("refunds");
  EXPECT_EQ(refunds.source.path, "data/refunds.ndjson");
  EXPECT_EQ(refunds.source.format, Format::kJsonl);  // from the .ndjson extension
  EXPECT_EQ(refunds.batch_size, 10000u);
  ASSERT_TRUE(refunds.schedule.has_value());
  EXPECT_EQ(refunds.schedule->cron, "*/15 1-5 * * 1,3");
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
  EXPECT_EQ(destinations.at("ledger").url, "http://127.0.0.1:9000/events");
  EXPECT_EQ(destinations.at("balances").kind, DestinationKind::kView);
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
  EXPECT_EQ(pipeline.source.settle, seconds(2));
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
  EXPECT_EQ(a.source.settle, milliseconds(0));
  ASSERT_TRUE(a.max_rejected.has_value());
  EXPECT_EQ(a.max_rejected->count, 25u);
  EXPECT_FALSE(a.max_rejected->percent.has_value());
  const auto& b = config.pipelines.at("b");
  EXPECT_EQ(b.source.settle, milliseconds(500));
  ASSERT_TRUE(b.max_rejected.has_value());
  EXPECT_EQ(b.max_rejected->percent, 2.5);
  EXPECT_EQ(b.max_rejected->text, "2.5%");
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
    return parse_config("pipelines:\n  p:\n    source: {path: " + path + "}\n", "c.yaml")
        .pipelines.at("p")
        .source.format;
  };
  EXPECT_EQ(format_of("in.csv"), Format::kCsv);
  EXPECT_EQ(format_of("in.CSV"), Format::kCsv);
  EXPECT_EQ(format_of("in.jsonl"), Format::kJsonl);
  EXPECT_EQ(format_of("in.JsonL"), Format::kJsonl);
  EXPECT_EQ(format_of("in.ndjson"), Format::kJsonl);
}

// Kinds, formats and triggers are enums; their names (API output, runs.trigger) stay as they were.
TEST(ParseConfig, KindFormatAndTriggerNames) {
  EXPECT_EQ(to_string(SourceKind::kFile), "file");
  EXPECT_EQ(to_string(DestinationKind::kHttp), "http");
  EXPECT_EQ(to_string(DestinationKind::kView), "view");
  EXPECT_EQ(to_string(Format::kCsv), "csv");
  EXPECT_EQ(to_string(Format::kJsonl), "jsonl");
  EXPECT_EQ(to_string(Trigger::kCli), "cli");
  EXPECT_EQ(to_string(Trigger::kSchedule), "schedule");
  EXPECT_EQ(to_string(Trigger::kWebhook), "webhook");
}

TEST(ParseConfig, ExplicitFormatOverridesTheExtension) {
  const auto config = parse_config("pipelines:\n  p:\n    source: {path: in.txt, format: jsonl}\n", "c.yaml");
  EXPECT_EQ(config.pipelines.at("p").source.format, Format::kJsonl);
}

TEST(ParseConfigErrors, UnknownTopLevelKeyNamesLineAndAllowedKeys) {
  EXPECT_EQ(config_error("database: postgresql:///x\npipeline: {}\n"),
            "config.yaml:2: unknown key 'pipeline' at the top level "
            "(expected one of: database, http, pipelines, relay, retention)");
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

TEST(ParseConfigErrors, UnknownNestedKeyNamesLineAndPath) {
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    batchsize: 10\n"),
            "config.yaml:4: unknown key 'batchsize' in pipelines.transactions "
            "(expected one of: source, batch_size, max_batch_bytes, max_rejected, schedule, destinations)");
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
  EXPECT_THAT(config_error("pipelines:\n  p:\n    source: {kind: nats, path: x.csv}\n"),
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
            "config.yaml:4: pipelines.transactions.destinations[0].kind: expected http or view, got \"kafka\"");
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
  EXPECT_EQ(config.destination_names_of_kind(DestinationKind::kView), Names{"account_balance"});
  EXPECT_EQ(config.destination_names_of_kind(DestinationKind::kHttp), Names{"ledger"});
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

TEST(ParseConfigErrors, WrongTypeNamesTheKey) {
  EXPECT_EQ(config_error("http: [127.0.0.1:8080]\n"),
            "config.yaml:1: http: expected a map with keys listen, max_connections, allow_unauthenticated, got a list");
  EXPECT_EQ(config_error("database: {url: x}\n"), "config.yaml:1: database: expected a string, got a map");
  EXPECT_EQ(config_error(std::string(kPipelineHead) + "    destinations: {name: x}\n"),
            "config.yaml:4: pipelines.transactions.destinations: expected a list of destinations, got a map");
  EXPECT_EQ(config_error("- a\n- b\n"),
            "config.yaml:1: expected a map with keys database, http, pipelines, relay, retention, got a list");
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

}  // namespace
}  // namespace tidemark::pipeline
