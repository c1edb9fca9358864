// The HTTP source through the crash matrix and random kills: a seeded
// workload served page by page (NDJSON, Link header paging, over TLS) by a real API, `tidemark
// run` crashed at each failpoint and SIGKILLed at random instants (mid-page included: pages
// and batches have sizes that do not divide each other), restarted until done; state,
// outbox, quarantine, ledger and checkpoint must equal the independent oracle's prediction
// for one clean run of the same records: no record lost, none loaded twice. Short by
// default; TIDEMARK_LONG_TESTS=1 runs more seeds and kills.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "tests/support/crash_harness.hpp"
#include "tests/support/test_api_server.hpp"
#include "tests/support/test_certificates.hpp"

namespace tidemark {
namespace {

using testing::CrashHarness;
using testing::HarnessSource;
using testing::long_tests_enabled;
using testing::PageShape;
using testing::TestApiServer;
using testing::TestCertificateAuthority;
using testing::TlsIdentity;

constexpr std::size_t kPageSize = 7;

// Records of the built-in entity mixing every outcome: keys reused with older, equal and
// newer revisions, equal and different amounts (duplicates, conflicts), amounts as JSON
// strings and numbers, and invalid amounts. Each as the JSON line the API serves and as the
// CSV line the oracle reads.
struct Records {
  std::vector<std::string> json;
  std::string csv;
};

Records generate(std::uint64_t seed, std::size_t count) {
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  const std::vector<std::string> amounts = {"10.00", "10.5", "0.01", "-3.20", "99999.99", "1.234", "12e1", "7"};
  Records out;
  out.csv = "transaction_id,source_revision,amount\n";
  for (std::size_t i = 0; i < count; ++i) {
    const std::string key = "K" + std::to_string(pick(count / 4 + 1));
    const std::string revision = std::to_string(1 + pick(3));
    const std::string& amount = amounts[pick(amounts.size())];
    // Strings and numbers decode to the same text; "12e1" is invalid either way (exponent).
    const bool as_number = pick(2) == 0 && amount != "12e1";
    out.json.push_back(R"({"transaction_id":")" + key + R"(","source_revision":)" + revision + R"(,"amount":)" +
                       (as_number ? amount : "\"" + amount + "\"") + "}");
    out.csv += key + "," + revision + "," + amount + "\n";
  }
  return out;
}

// Where the HTTP source puts record `index`: its page, line and byte in the NDJSON page.
std::string http_position(const std::vector<std::string>& json, std::size_t index, const std::string& identity) {
  const std::size_t page = index / kPageSize;
  std::size_t offset = 0;
  for (std::size_t i = page * kPageSize; i < index; ++i) offset += json[i].size() + 1;
  return "page " + std::to_string(page) + " of " + identity + ":" + std::to_string(index % kPageSize + 1) +
         " (byte " + std::to_string(offset) + ")";
}

class HttpSourceCrash : public ::testing::Test {
 protected:
  TestCertificateAuthority ca_;
  TlsIdentity identity_ = [this] {
    const auto certificate = ca_.issue({"localhost"}, {"127.0.0.1"});
    return TlsIdentity{certificate.cert_file, certificate.key_file};
  }();
  TestApiServer server_{PageShape::kNdjson, kPageSize, identity_};

  // Serves a seeded workload and returns the harness that runs it.
  std::unique_ptr<CrashHarness> harness(std::uint64_t seed, std::size_t count) {
    Records records = generate(seed, count);
    server_.set_records(records.json);
    HarnessSource source;
    source.yaml = "{kind: http, url: \"" + server_.base_url() + "?cursor={checkpoint}\", format: ndjson, "
                  "next: {link_header: next}, ca_file: " + ca_.ca_file().string() + "}";
    std::mt19937_64 rng(seed);
    source.workload = {seed, 3 + std::uniform_int_distribution<std::size_t>(0, 9)(rng), {{"in.csv", records.csv}}};
    const std::string identity = server_.base_url() + "?***";
    source.translate = [json = records.json, identity, count](testing::oracle::Outcome& expected) {
      // The oracle's positions are "in.csv:LINE (byte B)", the header being line 1.
      for (auto& entry : expected.quarantine) {
        const std::size_t index = std::stoull(entry.position.substr(entry.position.find(':') + 1)) - 2;
        entry.position = http_position(json, index, identity);
        entry.raw = json[index];
      }
      std::sort(expected.quarantine.begin(), expected.quarantine.end());  // compared as sorted sets
      const std::size_t last_page = (count - 1) / kPageSize;
      const std::string cursor =
          last_page == 0 ? "" : identity.substr(0, identity.size() - 4) + "?cursor=after%3A" +
                                    std::to_string(last_page * kPageSize);
      expected.checkpoint = R"({"page":)" + std::to_string(last_page) + R"(,"cursor":")" + cursor +
                            R"(","consumed":)" + std::to_string(count - last_page * kPageSize) + "}";
    };
    return std::make_unique<CrashHarness>(source);
  }
};

TEST_F(HttpSourceCrash, ACleanRunEqualsTheOracle) {
  auto run = harness(1, 120);
  std::string error;
  run->run_until_done("", 0, error);
  ASSERT_EQ(error, "");
  run->relay_until_delivered("", 0, error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(run->verify(), "");
  const auto& totals = run->expected().totals;
  for (std::size_t i : {0u, 1u, 6u, 7u}) EXPECT_GT(totals[i], 0u) << testing::oracle::kOutcomes[i];
}

TEST_F(HttpSourceCrash, CrashesAtEachFailpointThenRestartsEqualTheOracle) {
  const std::uint64_t seeds = long_tests_enabled() ? 5 : 1;
  for (const char* point : {"after_decode", "before_commit", "after_commit"}) {
    for (std::uint64_t seed = 10; seed < 10 + seeds; ++seed) {
      SCOPED_TRACE(std::string(point) + " seed " + std::to_string(seed));
      auto run = harness(seed, 90);
      std::string error;
      // Armed on several runs: each crashes at its first hit, so the kills move through the pages.
      const int crashes = run->run_until_done(point, long_tests_enabled() ? 8 : 3, error);
      ASSERT_EQ(error, "") << point << " seed " << seed;
      EXPECT_GT(crashes, 0);
      run->relay_until_delivered("", 0, error);
      ASSERT_EQ(error, "");
      EXPECT_EQ(run->verify(), "") << point << " seed " << seed;
    }
  }
}

TEST_F(HttpSourceCrash, RunsKilledAtRandomInstantsEqualTheOracleAndAReplayChangesNothing) {
  const std::uint64_t seeds = long_tests_enabled() ? 5 : 1;
  constexpr int kMaxKillDelayMs = 400;
  int killed = 0;
  for (std::uint64_t seed = 20; seed < 20 + seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::size_t count = long_tests_enabled() ? 600 : 200;
    auto run = harness(seed, count);
    // A first run lasts longer than the latest kill, on a fast machine too: the first kill
    // always lands mid-run (a quiet machine once finished the run before every kill).
    server_.set_page_delay(std::chrono::milliseconds(kMaxKillDelayMs / static_cast<int>(count / kPageSize) + 1));
    std::mt19937_64 rng(seed);
    std::string error;
    killed += run->kill_runs_until_done(long_tests_enabled() ? 12 : 4, kMaxKillDelayMs, rng, error);
    ASSERT_EQ(error, "") << "seed " << seed;
    run->relay_until_delivered("", 0, error);
    ASSERT_EQ(error, "");
    EXPECT_EQ(run->verify(), "") << "seed " << seed;
    EXPECT_EQ(run->replay_and_verify(), "") << "seed " << seed;
  }
  EXPECT_GT(killed, 0) << "no kill landed while a run was running";
}

}  // namespace
}  // namespace tidemark
