// https:// destinations: the relay speaks TLS to a real TLS receiver on
// 127.0.0.1 whose certificate comes from a CA made in the test, verifies the chain and the
// host name, sends SNI, and records a refused certificate as a retryable failure.
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <optional>

#include <boost/asio/ip/tcp.hpp>

#include "app/wiring/sinks.hpp"
#include "connectors/http/options_error.hpp"
#include "connectors/http/signature.hpp"
#include "connectors/http/tls.hpp"
#include "connectors/http/webhook_sink.hpp"
#include "pipeline/async/run_to_end.hpp"
#include "pipeline/relay/relay.hpp"
#include "tests/support/change_log.hpp"
#include "tests/support/run_helpers.hpp"
#include "tests/support/test_certificates.hpp"
#include "tests/support/test_database.hpp"
#include "tests/support/test_receiver.hpp"

namespace tidemark::connectors::http {
namespace {

using namespace std::chrono_literals;
using app::config::ConfigError;
using pipeline::DeliveryResult;
using pipeline::OutboxEvent;
using testing::ServerCertificate;
using testing::TempDir;
using testing::TestCertificateAuthority;
using testing::TestDatabase;
using testing::TestReceiver;
using testing::TlsIdentity;

constexpr char kSecret[] = "whsec_dGlkZW1hcmstdGVzdC1zZWNyZXQ=";  // "tidemark-test-secret"
constexpr char kSecretEnv[] = "TIDEMARK_TLS_TEST_SECRET";

TlsIdentity identity(const ServerCertificate& certificate) { return {certificate.cert_file, certificate.key_file}; }

std::string url_for(const std::string& host, const TestReceiver& receiver) {
  return "https://" + host + ":" + std::to_string(receiver.port()) + "/events";
}

WebhookOptions options_for(const std::string& url, const std::string& ca_file) {
  WebhookOptions options;
  options.url = url;
  options.ca_file = ca_file;
  options.signing_key = *decode_secret(kSecret);
  options.connect_timeout = 2s;
  options.request_timeout = 2s;
  return options;
}

std::unique_ptr<WebhookSink> sink_for(const std::string& url, const std::string& ca_file) {
  return std::make_unique<WebhookSink>(options_for(url, ca_file));
}

OutboxEvent event(const std::string& key) {
  OutboxEvent event;
  event.id = 1;
  event.destination = "ledger";
  event.idempotency_key = key;
  event.payload = R"({"event_id":")" + key + R"("})";
  event.attempt = 1;
  return event;
}

// One delivery, waited for (the sink's timeouts bound it).
DeliveryResult deliver(WebhookSink& sink, const std::string& key) { return pipeline::async::run_to_end(sink.deliver(event(key))); }

// Sets an environment variable for one test and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(RelayTls, DeliversToAnAddressWhoseCertificateTheCaFileTrusts) {
  TestCertificateAuthority ca;
  TestReceiver receiver(kSecret, identity(ca.issue({"localhost"}, {"127.0.0.1"})));
  ASSERT_EQ(receiver.url(), url_for("127.0.0.1", receiver));
  auto sink = sink_for(receiver.url(), ca.ca_file());

  const auto result = deliver(*sink, "ledger:tx-1:1");

  EXPECT_EQ(result.status, DeliveryResult::Status::kDelivered) << result.error;
  ASSERT_EQ(receiver.requests().size(), 1u);
  EXPECT_TRUE(receiver.requests()[0].signature_valid);
  EXPECT_EQ(receiver.requests()[0].body, R"({"event_id":"ledger:tx-1:1"})");
  EXPECT_EQ(receiver.server_names(), std::vector<std::string>{""}) << "no SNI for an IP address (RFC 6066)";
}

TEST(RelayTls, SendsTheHostNameAsSniAndKeepsTheConnectionAlive) {
  TestCertificateAuthority ca;
  TestReceiver receiver(kSecret, identity(ca.issue({"localhost"}, {})));
  auto sink = sink_for(url_for("localhost", receiver), ca.ca_file());

  for (const auto* key : {"ledger:tx-1:1", "ledger:tx-2:1", "ledger:tx-3:1"}) {
    const auto result = deliver(*sink, key);
    EXPECT_EQ(result.status, DeliveryResult::Status::kDelivered) << key << ": " << result.error;
  }

  EXPECT_EQ(receiver.applied_count(), 3u);
  EXPECT_EQ(receiver.server_names(), std::vector<std::string>{"localhost"})
      << "one handshake, naming the host, for three deliveries on one kept-alive connection";
}

TEST(RelayTls, CertificateForAnotherNameIsARetryableFailure) {
  TestCertificateAuthority ca;
  TestReceiver receiver(kSecret, identity(ca.issue({"other.example"}, {"192.0.2.1"})));

  struct Case {
    std::string host;
    std::string reason;
  };
  for (const auto& [host, reason] :
       {Case{"127.0.0.1", "IP address mismatch"}, Case{"localhost", "hostname mismatch"}}) {
    const auto url = url_for(host, receiver);
    auto sink = sink_for(url, ca.ca_file());
    const auto result = deliver(*sink, "ledger:tx-1:1");
    EXPECT_EQ(result.status, DeliveryResult::Status::kRetry) << host;
    EXPECT_EQ(result.error, "TLS handshake " + url + ": certificate verify failed: " + reason);
  }
  EXPECT_TRUE(receiver.requests().empty()) << "nothing is sent to a host that did not prove its name";
}

TEST(RelayTls, UnknownCaIsARetryableFailureWithTheCaFileAndWithTheSystemStore) {
  TestCertificateAuthority ca;
  TestCertificateAuthority other_ca("Someone Else's CA");
  TestReceiver receiver(kSecret, identity(ca.issue({"localhost"}, {"127.0.0.1"})));

  auto trusting_other = sink_for(receiver.url(), other_ca.ca_file());
  const auto with_ca_file = deliver(*trusting_other, "ledger:tx-1:1");
  EXPECT_EQ(with_ca_file.status, DeliveryResult::Status::kRetry);
  EXPECT_EQ(with_ca_file.error,
            "TLS handshake " + receiver.url() + ": certificate verify failed: unable to get local issuer certificate");

  // The system store (whatever this machine trusts) has never heard of a CA made just now.
  auto trusting_system = sink_for(receiver.url(), "");
  const auto with_system_store = deliver(*trusting_system, "ledger:tx-1:1");
  EXPECT_EQ(with_system_store.status, DeliveryResult::Status::kRetry);
  EXPECT_EQ(with_system_store.error, with_ca_file.error);
  EXPECT_TRUE(receiver.requests().empty());
}

TEST(RelayTls, SystemStoreIsTheOneSslCertFileNames) {
  TestCertificateAuthority ca;
  TestReceiver receiver(kSecret, identity(ca.issue({"localhost"}, {"127.0.0.1"})));
  const ScopedEnv cert_file("SSL_CERT_FILE", ca.ca_file().string());
  auto sink = sink_for(receiver.url(), "");

  const auto result = deliver(*sink, "ledger:tx-1:1");

  EXPECT_EQ(result.status, DeliveryResult::Status::kDelivered) << result.error;
  EXPECT_EQ(receiver.applied_count(), 1u);
}

TEST(RelayTls, PlainHttpServerBehindAnHttpsUrlIsARetryableHandshakeFailure) {
  TestReceiver plain(kSecret);
  TestCertificateAuthority ca;
  const auto url = url_for("127.0.0.1", plain);
  auto sink = sink_for(url, ca.ca_file());

  const auto result = deliver(*sink, "ledger:tx-1:1");

  EXPECT_EQ(result.status, DeliveryResult::Status::kRetry);
  EXPECT_TRUE(result.error.starts_with("TLS handshake " + url + ": ")) << result.error;
  EXPECT_TRUE(plain.requests().empty()) << "the event never went out in clear text";
}

TEST(RelayTls, ServerThatNeverAnswersTheHandshakeTimesOutWithinConnectTimeout) {
  // Listening, so the kernel completes the TCP connect, but nobody ever reads the ClientHello.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const auto url = "https://127.0.0.1:" + std::to_string(silent.local_endpoint().port()) + "/events";
  TestCertificateAuthority ca;
  auto options = options_for(url, ca.ca_file().string());
  options.connect_timeout = 200ms;
  options.request_timeout = 30s;
  WebhookSink sink(options);

  const auto started = std::chrono::steady_clock::now();
  const auto result = deliver(sink, "ledger:tx-1:1");

  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s) << "bounded by connect_timeout, not request_timeout";
  EXPECT_EQ(result.status, DeliveryResult::Status::kRetry);
  EXPECT_EQ(result.error, "timed out (200 ms) during TLS handshake to " + url);
}

TEST(RelayTls, ClientContextRequiresTls12AndAVerifiedPeer) {
  TestCertificateAuthority ca;
  for (const std::string& ca_file : {std::string(), ca.ca_file().string()}) {
    auto context = make_client_tls_context(ca_file);
    EXPECT_EQ(SSL_CTX_get_min_proto_version(context.native_handle()), TLS1_2_VERSION) << ca_file;
    EXPECT_EQ(SSL_CTX_get_verify_mode(context.native_handle()) & SSL_VERIFY_PEER, SSL_VERIFY_PEER) << ca_file;
  }
}

TEST(RelayTls, CaFileWithoutCertificatesIsRefusedAtStart) {
  TempDir folder;
  const auto garbage = folder.write("not-a-bundle.pem", "this is not PEM\n");
  try {
    sink_for("https://127.0.0.1:1/events", garbage.string());
    FAIL() << "a ca_file without certificates must be refused";
  } catch (const OptionsError& error) {
    EXPECT_TRUE(std::string(error.what()).starts_with("ca_file '" + garbage.string() + "' holds no PEM certificate"))
        << error.what();
  }
}

// One http destination with `url` and ca_file `ca_file` (on line 9).
std::string config_yaml(const std::string& url, const std::string& ca_file) {
  return "pipelines:\n"
         "  p:\n"
         "    source: {kind: file, path: in, format: csv}\n"
         "    destinations:\n"
         "      - name: ledger\n"
         "        kind: http\n"
         "        url: " + url + "\n"
         "        secret_env: " + kSecretEnv + "\n"
         "        ca_file: " + ca_file + "\n";
}

std::string config_error(const std::string& yaml) {
  try {
    app::config::parse_config(yaml, "config.yaml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "no error";
}

TEST(RelayTls, CaFileMustBeAReadableFileAndOnlyForHttps) {
  TempDir folder;
  const auto bundle = folder.write("ca.pem", "whatever\n");
  const auto missing = (folder.path() / "missing.pem").string();
  const std::string key = "config.yaml:9: pipelines.p.destinations[0].ca_file: ";

  const auto config = app::config::parse_config(config_yaml("https://h/e", bundle.string()), "config.yaml");
  EXPECT_EQ(config.pipelines.at("p").destinations.at(0).get_if<connectors::http::HttpDestinationOptions>()->ca_file,
            bundle.string());
  EXPECT_EQ(config_error(config_yaml("https://h/e", missing)),
            key + "cannot read '" + missing + "': No such file or directory");
  EXPECT_EQ(config_error(config_yaml("https://h/e", folder.path().string())),
            key + "'" + folder.path().string() + "' is a folder, not a PEM file of trusted certificates");
  EXPECT_EQ(config_error(config_yaml("http://h/e", bundle.string())), key + "applies to https:// URLs only");
  if (geteuid() != 0) {  // root reads any file
    ::chmod(bundle.c_str(), 0);
    EXPECT_EQ(config_error(config_yaml("https://h/e", bundle.string())),
              key + "cannot read '" + bundle.string() + "': Permission denied");
  }
}

// Through the config and the relay: ca_file reaches the sink, the event is delivered; a
// destination whose certificate is not trusted keeps its event pending with the reason.
TEST(RelayTls, RelayDeliversOverHttpsAndRecordsARefusedCertificateAsLastError) {
  TestCertificateAuthority ca;
  TestReceiver receiver(kSecret, identity(ca.issue({"localhost"}, {"127.0.0.1"})));
  const ScopedEnv secret(kSecretEnv, kSecret);
  TempDir folder;
  const auto config_file = folder.write(
      "config.yaml", "pipelines:\n"
                     "  p:\n"
                     "    source: {kind: file, path: in, format: csv}\n"
                     "    destinations:\n"
                     "      - {name: trusted, kind: http, url: " + receiver.url() + ", secret_env: " + kSecretEnv +
                         ", ca_file: " + ca.ca_file().string() + "}\n"
                     "      - {name: untrusted, kind: http, url: " + receiver.url() + ", secret_env: " + kSecretEnv +
                         "}\n");
  const auto config = app::config::load_config(config_file);
  TestDatabase db;
  {
    auto connection = db.connect();
    pqxx::work txn(*connection);
    testing::append_change(txn, {"trusted", "untrusted"}, "acct-1", "tx-1:1", "{}");
    txn.commit();
  }
  pipeline::relay::RelayOptions options;
  options.config.base_delay = 1h;  // the failed attempt is not retried within the test
  options.config.max_delay = 1h;
  options.poll_interval = 20ms;
  pipeline::relay::Relay relay(db.url(), app::make_sinks(config, db.url()), options);

  relay.drain();

  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox WHERE destination = 'trusted'"), "delivered 1");
  EXPECT_EQ(db.scalar("SELECT status || ' ' || attempts FROM outbox WHERE destination = 'untrusted'"), "pending 1");
  EXPECT_EQ(db.scalar("SELECT last_error FROM outbox WHERE destination = 'untrusted'"),
            "TLS handshake " + receiver.url() + ": certificate verify failed: unable to get local issuer certificate");
  ASSERT_EQ(receiver.requests().size(), 1u);
  EXPECT_EQ(receiver.requests()[0].webhook_id, "trusted:tx-1:1");
}

}  // namespace
}  // namespace tidemark::connectors::http
