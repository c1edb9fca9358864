// Differential property: every record the validator accepts is stored by
// PostgreSQL without a class-22 (data exception) error, and reads back exactly as the
// validator canonicalised it — nothing rounded, overflowed or shifted. Inputs are drawn
// from generators aimed at the edges of each rule, with a fixed seed printed on failure.
#include <gtest/gtest.h>

#include <random>

#include "pipeline/core/plan.hpp"
#include "pipeline/store/committer.hpp"
#include "pipeline/core/validate.hpp"
#include "tests/support/built_in_record.hpp"
#include "tests/support/test_database.hpp"

namespace tidemark::pipeline {
namespace {

using testing::TestDatabase;

class EdgeInputs {
 public:
  explicit EdgeInputs(std::uint64_t seed) : rng_(seed) {}

  std::string digits(int count) {
    std::string text;
    for (int i = 0; i < count; ++i) text += static_cast<char>('0' + pick(0, 9));
    return text;
  }

  std::string amount() {
    switch (pick(0, 5)) {
      case 0: return pick_of({"NaN", "Infinity", "-0.00", "1e3", "9999999999.99", "-9999999999.99", "10000000000.00"});
      case 1: return std::string(pick(0, 1) ? "-" : "") + digits(pick(10, 12)) + "." + digits(pick(0, 3));
      default: {
        std::string text = pick_of({"", "-", "+", "0", "00"}) + digits(pick(0, 11));
        if (pick(0, 1)) text += "." + digits(pick(0, 3));
        return text;
      }
    }
  }

  std::string timestamp() {
    auto two = [&](int low, int high) {
      const int value = pick(low, high);
      return std::string(value < 10 ? "0" : "") + std::to_string(value);
    };
    std::string text = std::to_string(pick(0, 1) ? pick(1, 9999) : pick(1969, 2039));
    while (text.size() < 4) text.insert(0, "0");
    text += "-" + two(0, 13) + "-" + two(0, 32) + pick_of({"T", "t", " "}) + two(0, 24) + ":" + two(0, 60) + ":" +
            two(0, 61);
    if (pick(0, 1)) text += "." + digits(pick(1, 8));
    text += pick(0, 2) == 0 ? pick_of({"Z", "z", ""}) : std::string(pick(0, 1) ? "+" : "-") + two(0, 24) + ":" + two(0, 60);
    return text;
  }

  std::string identifier() {
    static const std::vector<std::string> kPieces = {"a", "Z", "7", "-", " ", "é", "\xF0\x9F\x98\x80", "\t", "\x7F",
                                                     "\xC2\x85", "\xFF", "\xC0\xAF", "'", "\\", "\"", ","};
    std::string text;
    const int length = pick(0, 3) == 0 ? pick(120, 132) : pick(0, 12);
    for (int i = 0; i < length; ++i) text += kPieces[static_cast<std::size_t>(pick(0, pick(0, 3) == 0 ? 15 : 2))];
    return text;
  }

  std::string revision() {
    return pick(0, 3) == 0 ? pick_of({"-1", "1.0", "9223372036854775807", "9223372036854775808", "", "+1", "01"})
                           : digits(pick(1, 19));
  }

  int pick(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }

 private:
  std::string pick_of(std::initializer_list<const char*> options) {
    return *(options.begin() + pick(0, static_cast<int>(options.size()) - 1));
  }

  std::mt19937_64 rng_;
};

TEST(ValidatorAgainstPostgres, EveryAcceptedRecordIsStoredWithoutADataErrorAndReadsBackCanonically) {
  constexpr std::uint64_t kSeed = 20261130;
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  EdgeInputs inputs(kSeed);
  TestDatabase db;

  std::vector<DecodedRecord> decoded;
  std::vector<Checked> validated;
  for (int i = 0; i < 20000; ++i) {
    DecodedRecord record;
    // Unique keys, so that every accepted record is a candidate and reaches the table.
    const std::string id = inputs.identifier();
    record.field(built_in_field::kTransactionId) = Field{inputs.pick(0, 4) == 0 ? id : std::to_string(i) + "-" + id};
    record.field(built_in_field::kSourceRevision) = Field{inputs.revision()};
    record.field(built_in_field::kAmount) =
        Field{inputs.amount(), inputs.pick(0, 1) ? FieldKind::kNumber : FieldKind::kString};
    if (inputs.pick(0, 1)) record.field(built_in_field::kAccountId) = Field{inputs.identifier()};
    if (inputs.pick(0, 1)) record.field(built_in_field::kOccurredAt) = Field{inputs.timestamp()};
    record.raw = "generated " + std::to_string(i);
    record.position.file = "generated";
    record.position.line = static_cast<std::uint64_t>(i) + 1;
    Validated result = validate(record);
    if (std::holds_alternative<Record>(result)) {
      decoded.push_back(std::move(record));
      validated.emplace_back(to_entity_record(std::get<Record>(result)));
    }
  }
  ASSERT_GT(validated.size(), 2000u) << "the generators should produce many valid records";

  const BatchPlan plan = plan_batch(validated);
  Committer committer(db.database(), "differential", "generated", {});
  const std::int64_t run_id = std::stoll(db.scalar(
      "INSERT INTO runs (pipeline, trigger, mode, status) VALUES ('differential', 'cli', 'resume', 'running') "
      "RETURNING id"));
  BatchResult result;
  ASSERT_NO_THROW(result = committer.commit({decoded, validated, plan, 1, "start", std::nullopt}, {"csv"}, run_id));
  EXPECT_EQ(result.counts[Outcome::kInvalid], 0u);

  // Every stored row reads back as the validator's canonical form.
  auto connection = db.connect();
  pqxx::nontransaction txn(*connection);
  std::map<std::string, std::pair<std::string, std::string>> stored;
  for (const auto& row : txn.exec("SELECT transaction_id, amount::text, COALESCE(to_char(occurred_at AT TIME ZONE "
                                  "'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), '') FROM transaction_state")) {
    stored[row[0].c_str()] = {row[1].c_str(), row[2].c_str()};
  }
  std::size_t compared = 0;
  for (std::size_t v = 0; v < plan.versions.size(); ++v) {
    if (!plan.versions[v].candidate) continue;
    // The built-in fields in canonical form: amount, account_id, occurred_at.
    const EntityRecord& record = std::get<EntityRecord>(validated[plan.versions[v].first_index]);
    const auto found = stored.find(record.key);
    ASSERT_NE(found, stored.end()) << record.key;
    if (result.outcomes[plan.versions[v].first_index] != Outcome::kInserted) continue;
    EXPECT_EQ(found->second.first, record.values[0].value()) << record.key;
    EXPECT_EQ(found->second.second, record.values[2].value_or("")) << record.key;
    ++compared;
  }
  EXPECT_GT(compared, 2000u);
}

}  // namespace
}  // namespace tidemark::pipeline
