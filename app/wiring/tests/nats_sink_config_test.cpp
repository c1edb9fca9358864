#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

#include "app/config/config.hpp"
#include "app/config/tests/config_errors.hpp"
#include "app/wiring/sinks.hpp"

namespace tidemark::app {
namespace {

using ::testing::HasSubstr;
using config::config_error;
using config::ConfigError;
using config::parse_config;

// A pipeline whose destination (line 5) the tests write.
std::string with_destination(const std::string& destination) {
  return "pipelines:\n"                        // 1
         "  transactions:\n"                   // 2
         "    source: {path: data/in.csv}\n"   // 3
         "    destinations:\n"                 // 4
         "      - " + destination + "\n";      // 5
}

TEST(NatsSinkConfig, ANatsDestinationParsesIntoItsOptions) {
  const auto config = parse_config(
      with_destination("{name: bus, kind: nats, servers: [nats://127.0.0.1:4222, nats://10.0.0.2:4222], "
                       "subject: ledger.events, stream: LEDGER, creds_env: BUS_CREDS}"),
      "config.yaml");
  const auto& destination = config.pipelines.at("transactions").destinations.at(0);
  EXPECT_EQ(destination.kind(), "nats");
  const auto* nats = destination.get_if<connectors::nats_sink::NatsDestinationOptions>();
  ASSERT_NE(nats, nullptr);
  EXPECT_EQ(nats->servers, (std::vector<std::string>{"nats://127.0.0.1:4222", "nats://10.0.0.2:4222"}));
  EXPECT_EQ(nats->subject, "ledger.events");
  EXPECT_EQ(nats->stream, "LEDGER");
  EXPECT_EQ(nats->creds_env, "BUS_CREDS");
}

TEST(NatsSinkConfig, MissingOrBadKeysNameTheLineAndKey) {
  EXPECT_EQ(config_error(with_destination("{name: bus, kind: nats, subject: s, stream: S}")),
            "config.yaml:5: pipelines.transactions.destinations[0]: missing required key 'servers'");
  EXPECT_THAT(config_error(with_destination("{name: bus, kind: nats, servers: [], subject: s, stream: S}")),
              HasSubstr("config.yaml:5: pipelines.transactions.destinations[0].servers: expected a list of server"));
  EXPECT_THAT(
      config_error(with_destination("{name: bus, kind: nats, servers: [http://x:4222], subject: s, stream: S}")),
      HasSubstr("destinations[0].servers[0]: expected a URL starting with nats://"));
  EXPECT_THAT(config_error(with_destination("{name: bus, kind: nats, servers: [nats://x:4222], subject: 'a.*', "
                                            "stream: S}")),
              HasSubstr("destinations[0].subject: expected a NATS subject"));
  EXPECT_THAT(config_error(with_destination("{name: bus, kind: nats, servers: [nats://x:4222], subject: s, "
                                            "stream: A.B}")),
              HasSubstr("destinations[0].stream: expected a JetStream stream name"));
  EXPECT_THAT(config_error(with_destination("{name: bus, kind: nats, servers: [nats://x:4222], subject: s, "
                                            "stream: S, creds_env: 'not a name'}")),
              HasSubstr("destinations[0].creds_env: expected the name of an environment variable"));
}

TEST(NatsSinkConfig, EachKindTakesOnlyItsOwnKeys) {
  EXPECT_EQ(config_error(with_destination("{name: bus, kind: nats, servers: [nats://x:4222], subject: s, "
                                          "stream: S, url: http://x/}")),
            "config.yaml:5: pipelines.transactions.destinations[0].url: applies to http destinations only");
  EXPECT_EQ(config_error(with_destination("{name: hook, kind: http, url: http://x/, secret_env: S, subject: s}")),
            "config.yaml:5: pipelines.transactions.destinations[0].subject: applies to nats destinations only");
  EXPECT_EQ(config_error(with_destination("{name: account_balance, kind: view, stream: S}")),
            "config.yaml:5: pipelines.transactions.destinations[0].stream: a view destination takes only name and "
            "kind");
}

TEST(NatsSinkConfig, AnUnsetCredsEnvIsAConfigErrorNamingDestinationAndVariable) {
  const auto config = parse_config(with_destination("{name: bus, kind: nats, servers: [nats://x:4222], subject: s, "
                                                    "stream: S, creds_env: TIDEMARK_TEST_UNSET_CREDS}"),
                                   "config.yaml");
  ::unsetenv("TIDEMARK_TEST_UNSET_CREDS");
  try {
    app::nats_options(config.destinations().at("bus"), config.relay);
    FAIL() << "no error";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.what(), HasSubstr("destination 'bus': environment variable TIDEMARK_TEST_UNSET_CREDS is not set"));
  }
  ::setenv("TIDEMARK_TEST_UNSET_CREDS", "/etc/nats/relay.creds", 1);
  EXPECT_EQ(app::nats_options(config.destinations().at("bus"), config.relay).connection.credentials_file,
            "/etc/nats/relay.creds");
  ::unsetenv("TIDEMARK_TEST_UNSET_CREDS");
}

TEST(NatsSinkConfig, TheSinkGetsTheRelaysTimeoutsAndRedeliveryHorizon) {
  const auto config = parse_config(with_destination("{name: bus, kind: nats, servers: [nats://x:4222], subject: s, "
                                                    "stream: S}") +
                                       "relay: {max_attempts: 3, base_delay: 1s, max_delay: 4s, connect_timeout: 2s, "
                                       "request_timeout: 3s, max_in_flight: 5}\n",
                                   "config.yaml");
  const auto options = app::nats_options(config.destinations().at("bus"), config.relay);
  EXPECT_EQ(options.connection.connect_timeout, std::chrono::seconds(2));
  EXPECT_EQ(options.ack_timeout, std::chrono::seconds(3));
  EXPECT_EQ(options.max_in_flight, 5u);
  // Lease 2 × (2 s + 3 s) = 10 s per attempt, 3 attempts; delays capped at 1 s and 2 s.
  EXPECT_EQ(options.redelivery_horizon, std::chrono::seconds(3 * 10 + 1 + 2));
}

}  // namespace
}  // namespace tidemark::app
