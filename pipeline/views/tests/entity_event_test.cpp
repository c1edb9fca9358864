// The event a view reads: both envelopes the commit step logs (pipeline/store/entity_sql.cpp)
// parse to one EntityEvent, and only the built-in entity's gives the shipped views their fields.
#include "pipeline/views/entity_event.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <tuple>

namespace tidemark::pipeline::views {
namespace {

// As the reader hands them over: the logged payload plus event_id and sequence
// (tidemark_event_payload), in jsonb's key order.
constexpr char kLegacyPayload[] =
    R"({"amount": "12345678901.25", "pipeline": "payments", "event_id": "account_balance:t1:3", )"
    R"("sequence": 7, "account_id": "acct-2", "occurred_at": "2024-01-02T10:00:00.000000Z", )"
    R"("transaction_id": "t1", "previous_amount": "-0.10", "source_revision": 3, )"
    R"("previous_account_id": "acct-1", "previous_occurred_at": null})";

constexpr char kEntityPayload[] =
    R"({"key": "o1", "entity": "orders", "fields": {"paid": null, "amount": "9.9900", "quantity": 12}, )"
    R"("event_id": "ledger:orders:o1:2", "pipeline": "orders_daily", "previous": {"fields": )"
    R"({"paid": true, "amount": "1.5000", "quantity": 7}, "revision": 1}, "revision": 2, "sequence": 3, )"
    R"("partition": "c1"})";

OutboxEvent outbox(std::string payload, std::string partition_key = "acct-2", std::int64_t sequence = 7) {
  OutboxEvent event;
  event.id = 41;
  event.destination = "account_balance";
  event.idempotency_key = "account_balance:t1:3";
  event.partition_key = std::move(partition_key);
  event.sequence = sequence;
  event.payload = std::move(payload);
  event.attempt = 2;
  return event;
}

TEST(EntityEvent, TheBuiltInEntitysFlatEnvelopeIsAnEventOfEntityTransaction) {
  const auto event = parse_entity_event(outbox(kLegacyPayload));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->outbox_id, 41);
  EXPECT_EQ(event->event_id, "account_balance:t1:3");
  EXPECT_EQ(event->partition_key, "acct-2");
  EXPECT_EQ(event->sequence, 7);
  EXPECT_EQ(event->entity, "transaction");
  EXPECT_EQ(event->key, "t1");
  EXPECT_EQ(event->revision, 3);
  EXPECT_TRUE(event->legacy);
  EXPECT_EQ(event->payload, kLegacyPayload);
}

TEST(EntityEvent, ADeclaredEntitysEnvelopeNamesItsEntityKeyAndRevision) {
  auto delivered = outbox(kEntityPayload, "c1", 3);
  delivered.idempotency_key = "ledger:orders:o1:2";
  const auto event = parse_entity_event(delivered);
  ASSERT_TRUE(event);
  EXPECT_EQ(event->entity, "orders");
  EXPECT_EQ(event->key, "o1");
  EXPECT_EQ(event->revision, 2);
  EXPECT_FALSE(event->legacy);
  EXPECT_EQ(event->event_id, "ledger:orders:o1:2");
  EXPECT_EQ(event->partition_key, "c1");
  EXPECT_EQ(event->sequence, 3);
  EXPECT_EQ(event->payload, kEntityPayload);
}

TEST(EntityEvent, AFutureDeletesNullFieldsAreStillAnEntityEvent) {
  const auto event =
      parse_entity_event(outbox(R"({"entity": "orders", "key": "o1", "revision": 4, "fields": null})"));
  ASSERT_TRUE(event);
  EXPECT_EQ(event->entity, "orders");
  EXPECT_EQ(event->revision, 4);
}

TEST(EntityEvent, ARevisionIsReadAsTheIntegerItIsWrittenAsUpToTheLargestBigint) {
  const auto largest =
      parse_entity_event(outbox(R"({"entity": "orders", "key": "o1", "revision": 9223372036854775807})"));
  ASSERT_TRUE(largest);
  EXPECT_EQ(largest->revision, 9223372036854775807);
  const auto zero = parse_entity_event(outbox(R"({"transaction_id": "t1", "source_revision": 0})"));
  ASSERT_TRUE(zero);
  EXPECT_EQ(zero->revision, 0);
}

TEST(EntityEvent, APayloadOfNeitherEnvelopeIsNoEntityEvent) {
  for (const char* payload : {
           "",
           "not json",
           "[1, 2]",
           R"("transaction")",
           R"({})",
           R"({"key": "o1", "revision": 2})",                                // no entity: legacy names needed
           R"({"entity": "orders", "revision": 2})",                         // no key
           R"({"entity": "orders", "key": "o1"})",                           // no revision
           R"({"entity": "", "key": "o1", "revision": 2})",                  // an empty entity
           R"({"entity": null, "key": "o1", "revision": 2})",                // an entity that is not text
           R"({"entity": "orders", "key": 17, "revision": 2})",              // a key that is not text
           R"({"entity": "orders", "key": "o1", "revision": "2"})",          // a revision as text
           R"({"entity": "orders", "key": "o1", "revision": 2.0})",          // a double, not an integer
           R"({"entity": "orders", "key": "o1", "revision": 2e0})",          // a double, not an integer
           R"({"entity": "orders", "key": "o1", "revision": 9223372036854775808})",  // above bigint
           R"({"entity": "orders", "key": "o1", "revision": 123456789012345678901234567890})",
           R"({"transaction_id": "t1"})",                                    // no source_revision
           R"({"source_revision": 1, "amount": "1.00"})",                    // no transaction_id
           R"({"transaction_id": "t1", "source_revision": 1.5})",
       }) {
    EXPECT_FALSE(parse_entity_event(outbox(payload))) << payload;
  }
}

TEST(EntityEvent, TheShippedViewsReadTheBuiltInEntitysFieldsAsTheyAreWritten) {
  const auto event = parse_entity_event(outbox(kLegacyPayload));
  ASSERT_TRUE(event);
  const auto view_event = to_view_event(*event);
  ASSERT_TRUE(view_event);
  EXPECT_EQ(view_event->outbox_id, 41);
  EXPECT_EQ(view_event->event_id, "account_balance:t1:3");
  EXPECT_EQ(view_event->partition_key, "acct-2");
  EXPECT_EQ(view_event->sequence, 7);
  EXPECT_EQ(view_event->transaction_id, "t1");
  EXPECT_EQ(view_event->source_revision, 3);
  EXPECT_EQ(view_event->amount, "12345678901.25");  // the text, every digit: never a double
  EXPECT_EQ(view_event->previous_amount, "-0.10");
  EXPECT_EQ(view_event->previous_account_id, "acct-1");
  EXPECT_EQ(view_event->occurred_at, "2024-01-02T10:00:00.000000Z");
}

TEST(EntityEvent, AFirstRevisionHasNoPreviousFieldsAndAnAbsentDayHasNone) {
  const auto event = parse_entity_event(outbox(
      R"({"transaction_id": "t2", "source_revision": 1, "amount": "5.00", "account_id": null, )"
      R"("occurred_at": null, "previous_amount": null, "previous_account_id": null})",
      "t2", 1));
  ASSERT_TRUE(event);
  const auto view_event = to_view_event(*event);
  ASSERT_TRUE(view_event);
  EXPECT_EQ(view_event->amount, "5.00");
  EXPECT_EQ(view_event->previous_amount, std::nullopt);
  EXPECT_EQ(view_event->previous_account_id, std::nullopt);
  EXPECT_EQ(view_event->occurred_at, std::nullopt);
}

TEST(EntityEvent, TheShippedViewsReadNothingFromAnotherEnvelopeOrAnEventMissingWhatTheyNeed) {
  const auto declared = parse_entity_event(outbox(kEntityPayload, "c1", 3));
  ASSERT_TRUE(declared);
  EXPECT_FALSE(to_view_event(*declared));
  // Even when a declared entity has fields of the same names.
  const auto look_alike = parse_entity_event(outbox(
      R"({"entity": "payments", "key": "t1", "revision": 1, "fields": {"amount": "1.00"}, "amount": "1.00"})"));
  ASSERT_TRUE(look_alike);
  EXPECT_FALSE(to_view_event(*look_alike));

  const std::string no_amount = R"({"transaction_id": "t1", "source_revision": 1})";
  const std::string amount_as_number = R"({"transaction_id": "t1", "source_revision": 1, "amount": 1.25})";
  const std::string complete = R"({"transaction_id": "t1", "source_revision": 1, "amount": "1.25"})";
  for (const auto& [payload, partition, sequence] :
       {std::tuple{no_amount, "a", 1}, std::tuple{amount_as_number, "a", 1}, std::tuple{complete, "", 1},
        std::tuple{complete, "a", 0}}) {
    const auto event = parse_entity_event(outbox(payload, partition, sequence));
    ASSERT_TRUE(event) << payload;
    EXPECT_FALSE(to_view_event(*event)) << payload << " partition '" << partition << "' sequence " << sequence;
  }
  ASSERT_TRUE(parse_entity_event(outbox(complete, "a", 1)));
  EXPECT_TRUE(to_view_event(*parse_entity_event(outbox(complete, "a", 1))));
}

TEST(EntityEvent, ParseViewEventIsParseEntityEventThenToViewEvent) {
  const auto parsed = parse_view_event(outbox(kLegacyPayload));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->amount, "12345678901.25");
  EXPECT_EQ(parsed->source_revision, 3);
  EXPECT_FALSE(parse_view_event(outbox(kEntityPayload, "c1", 3)));
  EXPECT_FALSE(parse_view_event(outbox("not json")));
}

}  // namespace
}  // namespace tidemark::pipeline::views
