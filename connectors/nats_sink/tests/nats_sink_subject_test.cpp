#include <nats/nats.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "connectors/nats_sink/nats_sink.hpp"
#include "connectors/nats_sink/subject.hpp"

namespace tidemark::connectors::nats_sink {
namespace {

using pipeline::DeliveryResult;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

TEST(NatsSinkSubjectToken, KeepsLettersDigitsUnderscoreAndHyphen) {
  EXPECT_EQ(subject_token("acc-42_Z"), "acc-42_Z");
  EXPECT_EQ(subject_token("ABCxyz0123456789"), "ABCxyz0123456789");
}

TEST(NatsSinkSubjectToken, PercentEncodesEverythingElseInUpperCaseHex) {
  EXPECT_EQ(subject_token("a.b"), "a%2Eb");         // a '.' would split the token
  EXPECT_EQ(subject_token("*"), "%2A");             // wildcards
  EXPECT_EQ(subject_token(">"), "%3E");
  EXPECT_EQ(subject_token("a b\tc"), "a%20b%09c");  // whitespace ends a subject
  EXPECT_EQ(subject_token("100%"), "100%25");       // '%' itself, so that decoding is unambiguous
  EXPECT_EQ(subject_token("tx-\xC3\xA9"), "tx-%C3%A9");  // UTF-8 bytes one by one
  EXPECT_EQ(subject_token(std::string("\x00\xFF", 2)), "%00%FF");
}

TEST(NatsSinkSubjectToken, EveryByteComesOutAsATokenOfTheAllowedCharacters) {
  std::string all;
  for (int byte = 1; byte < 256; ++byte) all += static_cast<char>(byte);
  const std::string token = subject_token(all);
  for (const char c : token) {
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                         c == '-' || c == '%';
    ASSERT_TRUE(allowed) << "byte " << static_cast<int>(static_cast<unsigned char>(c)) << " in " << token;
  }
  EXPECT_TRUE(is_publish_subject("s." + token));
}

TEST(NatsSinkSubjectToken, DistinctKeysGiveDistinctTokens) {
  // Reversible: the keys that look alike once encoded stay apart.
  EXPECT_NE(subject_token("a.b"), subject_token("a%2Eb"));
  EXPECT_NE(subject_token("a_b"), subject_token("a b"));
  EXPECT_NE(subject_token("A"), subject_token("a"));
}

TEST(NatsSinkSubjectFor, AppendsTheEncodedPartitionKey) {
  EXPECT_EQ(subject_for("orders.events", "acc-A"), "orders.events.acc-A");
  EXPECT_EQ(subject_for("events", "acc.A"), "events.acc%2EA");
}

TEST(NatsSinkSubjectFor, AnEventWithoutAPartitionKeyGoesToTheFixedTokenNoKeyCanProduce) {
  EXPECT_EQ(subject_for("events", ""), "events.%00");
  EXPECT_EQ(std::string(kNoPartitionToken), "%00");
  // Only a NUL byte encodes to it, and no stored key holds one.
  EXPECT_EQ(subject_token(std::string(1, '\0')), kNoPartitionToken);
}

TEST(NatsSinkSubject, PublishSubjectsAreDotSeparatedTokensWithoutWildcardsOrSpaces) {
  EXPECT_TRUE(is_publish_subject("events"));
  EXPECT_TRUE(is_publish_subject("orders.events-v2"));
  EXPECT_FALSE(is_publish_subject(""));
  EXPECT_FALSE(is_publish_subject(".events"));
  EXPECT_FALSE(is_publish_subject("events."));
  EXPECT_FALSE(is_publish_subject("a..b"));
  EXPECT_FALSE(is_publish_subject("events.*"));
  EXPECT_FALSE(is_publish_subject("events.>"));
  EXPECT_FALSE(is_publish_subject("my events"));
  EXPECT_FALSE(is_publish_subject("a\tb"));
}

TEST(NatsSinkSubject, StreamNamesRefuseWhatTheServerRefuses) {
  EXPECT_TRUE(is_stream_name("EVENTS"));
  EXPECT_TRUE(is_stream_name("ledger_events-1"));
  EXPECT_FALSE(is_stream_name(""));
  EXPECT_FALSE(is_stream_name("A.B"));
  EXPECT_FALSE(is_stream_name("A*"));
  EXPECT_FALSE(is_stream_name("A>"));
  EXPECT_FALSE(is_stream_name("A/B"));
  EXPECT_FALSE(is_stream_name("A\\B"));
  EXPECT_FALSE(is_stream_name("A B"));
  EXPECT_FALSE(is_stream_name(std::string(256, 'A')));
}

TEST(NatsSinkDuplicateWindow, MustBeLongerThanTheHorizon) {
  EXPECT_EQ(duplicate_window_problem("EVENTS", minutes(20), minutes(13)), "");
  const auto equal = duplicate_window_problem("EVENTS", minutes(13), minutes(13));
  EXPECT_THAT(equal, HasSubstr("EVENTS has a duplicate window of 13m"));
  EXPECT_THAT(equal, HasSubstr("redelivery horizon of 13m"));
  // JetStream's 2-minute default is shorter than the default horizon (811 s).
  const auto by_default = duplicate_window_problem("EVENTS", minutes(2), seconds(811));
  EXPECT_THAT(by_default, HasSubstr("duplicate window of 2m"));
  EXPECT_THAT(by_default, HasSubstr("horizon of 811s"));
}

TEST(NatsSinkDuplicateWindow, SetupGivesTwiceTheHorizonCappedByMaxAge) {
  EXPECT_EQ(setup_duplicate_window(seconds(811), nanoseconds(0)), seconds(1622));
  EXPECT_EQ(setup_duplicate_window(seconds(811), minutes(20)), minutes(20));
  EXPECT_EQ(setup_duplicate_window(seconds(811), minutes(60)), seconds(1622));
}

TEST(NatsSinkClassifyPublish, ConnectionTroubleAndTimeoutsAreRetried) {
  for (const natsStatus status :
       {NATS_TIMEOUT, NATS_CONNECTION_CLOSED, NATS_CONNECTION_DISCONNECTED, NATS_NO_SERVER, NATS_IO_ERROR,
        NATS_STALE_CONNECTION}) {
    const auto result = classify_publish(status, 0, "publish failed");
    EXPECT_EQ(result.status, DeliveryResult::Status::kRetry) << natsStatus_GetText(status);
    EXPECT_EQ(result.error, "publish failed");
  }
}

TEST(NatsSinkClassifyPublish, NoStreamListeningIsRetriedAndSaysWhy) {
  // As nats.c reports it: with the code of "JetStream not enabled", which is not the cause.
  const auto result = classify_publish(NATS_NO_RESPONDERS, JSNotEnabledErr, "publish to s.k");
  EXPECT_EQ(result.status, DeliveryResult::Status::kRetry);
  EXPECT_EQ(result.error, "publish to s.k (no JetStream stream captures this subject: check the stream's subjects)");
}

TEST(NatsSinkClassifyPublish, ARefusalNoRetryCanChangeIsDeadWithTheServersCode) {
  for (const int code : {JSStreamMessageExceedsMaximumErr, JSStreamSealedErr, JSStreamNotMatchErr}) {
    const auto result = classify_publish(NATS_ERR, code, "refused");
    EXPECT_EQ(result.status, DeliveryResult::Status::kDead) << code;
    EXPECT_THAT(result.error, HasSubstr("(JetStream error " + std::to_string(code) + ")"));
  }
  EXPECT_EQ(classify_publish(NATS_MAX_PAYLOAD, 0, "too big").status, DeliveryResult::Status::kDead);
  EXPECT_EQ(classify_publish(NATS_NOT_PERMITTED, 0, "denied").status, DeliveryResult::Status::kDead);
}

TEST(NatsSinkClassifyPublish, AStreamTemporarilyUnableToStoreIsRetried) {
  for (const int code : {JSClusterNotAvailErr, JSStreamStoreFailedErr, JSInsufficientResourcesErr}) {
    EXPECT_EQ(classify_publish(NATS_ERR, code, "busy").status, DeliveryResult::Status::kRetry) << code;
  }
}

}  // namespace
}  // namespace tidemark::connectors::nats_sink
