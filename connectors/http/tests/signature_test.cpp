// Standard Webhooks signing and verification (connectors/http/signature), and the HTTP
// status classification of the webhook sink.
#include <gtest/gtest.h>

#include "connectors/http/signature.hpp"
#include "connectors/http/webhook_sink.hpp"

namespace tidemark::connectors::http {
namespace {

using pipeline::DeliveryResult;

// The example of the Standard Webhooks specification.
constexpr std::string_view kSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr std::string_view kId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr std::int64_t kTimestamp = 1614265330;
constexpr std::string_view kBody = R"({"test": 2432232314})";
constexpr std::string_view kSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

std::string key() { return *decode_secret(kSecret); }

TEST(WebhookSignature, SignMatchesTheSpecificationExample) {
  EXPECT_EQ(sign(key(), kId, kTimestamp, kBody), kSignature);
}

TEST(WebhookSignature, DecodeSecretRejectsTextWithoutPrefixOrBase64) {
  EXPECT_FALSE(decode_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
  EXPECT_FALSE(decode_secret("whsec_"));
  EXPECT_FALSE(decode_secret("whsec_not*base64!"));
  EXPECT_TRUE(decode_secret("whsec_dGVzdA=="));
  EXPECT_EQ(*decode_secret("whsec_dGVzdA=="), "test");
}

TEST(WebhookSignature, DecodeSecretAcceptsUnpaddedBase64AsTheStandardWebhooksLibrariesDo) {
  EXPECT_EQ(decode_secret("whsec_dGVzdA"), "test");     // "dGVzdA==" without its padding
  EXPECT_EQ(decode_secret("whsec_dGVzdDE"), "test1");   // "dGVzdDE="
  EXPECT_EQ(decode_secret("whsec_dGVzdDEy"), "test12");  // no padding needed
  EXPECT_FALSE(decode_secret("whsec_dGVzd"));            // one char short of a byte: not base64
  EXPECT_FALSE(decode_secret("whsec_dGVzdA="));          // padding, but incomplete
}

TEST(WebhookSignature, VerifyAcceptsAnyMatchingV1SignatureAmongSeveral) {
  const std::string header = "v1,bm90IHRoZSByaWdodCBvbmU= " + std::string(kSignature);
  EXPECT_EQ(verify(key(), {kId, "1614265330", header}, kBody, kTimestamp), Verification::kValid);
}

TEST(WebhookSignature, VerifyRejectsChangedBodyIdOrKey) {
  EXPECT_EQ(verify(key(), {kId, "1614265330", kSignature}, R"({"test": 2432232315})", kTimestamp),
            Verification::kSignatureMismatch);
  EXPECT_EQ(verify(key(), {"msg_other", "1614265330", kSignature}, kBody, kTimestamp),
            Verification::kSignatureMismatch);
  EXPECT_EQ(verify("another key", {kId, "1614265330", kSignature}, kBody, kTimestamp),
            Verification::kSignatureMismatch);
}

TEST(WebhookSignature, VerifyRejectsTimestampsOutsideTheTolerance) {
  const std::int64_t now = kTimestamp + 301;
  EXPECT_EQ(verify(key(), {kId, "1614265330", kSignature}, kBody, now), Verification::kTimestampTooOld);
  EXPECT_EQ(verify(key(), {kId, "1614265330", kSignature}, kBody, kTimestamp - 301), Verification::kTimestampTooNew);
  EXPECT_EQ(verify(key(), {kId, "1614265330", kSignature}, kBody, kTimestamp + 299), Verification::kValid);
}

TEST(WebhookSignature, VerifyRejectsMissingHeadersAndMalformedTimestamps) {
  EXPECT_EQ(verify(key(), {"", "1614265330", kSignature}, kBody, kTimestamp), Verification::kMissingHeader);
  EXPECT_EQ(verify(key(), {kId, "", kSignature}, kBody, kTimestamp), Verification::kMissingHeader);
  EXPECT_EQ(verify(key(), {kId, "1614265330", ""}, kBody, kTimestamp), Verification::kMissingHeader);
  EXPECT_EQ(verify(key(), {kId, "16142653x0", kSignature}, kBody, kTimestamp), Verification::kBadTimestamp);
}

TEST(WebhookStatus, TwoHundredsAreDelivered) {
  EXPECT_EQ(classify_status(200, "", "").status, DeliveryResult::Status::kDelivered);
  EXPECT_EQ(classify_status(204, "", "").status, DeliveryResult::Status::kDelivered);
}

TEST(WebhookStatus, TimeoutsThrottlingAndServerErrorsAreRetried) {
  for (const int status : {408, 429, 500, 502, 503}) {
    EXPECT_EQ(classify_status(status, "", "").status, DeliveryResult::Status::kRetry) << status;
  }
}

TEST(WebhookStatus, RetryAfterSecondsAreKeptAndHttpDatesIgnored) {
  EXPECT_EQ(classify_status(429, "7", "").retry_after, std::chrono::seconds(7));
  EXPECT_FALSE(classify_status(503, "Wed, 21 Oct 2015 07:28:00 GMT", "").retry_after);
}

TEST(WebhookStatus, RetryAfterIsParsedWithoutOverflowAndCapped) {
  using pipeline::kMaxRetryAfter;
  EXPECT_EQ(classify_status(429, "3599", "").retry_after, std::chrono::seconds(3599));
  for (const char* huge : {"3600", "10000000000000", "9223372036854775807", "99999999999999999999999999999"}) {
    EXPECT_EQ(classify_status(429, huge, "").retry_after, kMaxRetryAfter) << huge;
  }
  for (const char* malformed : {"", "-1", "+5", "1.5", "5 "}) {
    EXPECT_FALSE(classify_status(503, malformed, "").retry_after) << malformed;
  }
}

TEST(WebhookStatus, ErrorBodiesAreCutBetweenCharacters) {
  std::string body(199, 'x');
  body += "\xC3\xA9tat";
  EXPECT_EQ(classify_status(500, "", body).error, "HTTP 500: " + std::string(197, 'x') + "\xE2\x80\xA6");
}

TEST(WebhookStatus, OtherClientErrorsAndRedirectsAreDead) {
  for (const int status : {301, 400, 401, 403, 404, 410, 422}) {
    EXPECT_EQ(classify_status(status, "", "").status, DeliveryResult::Status::kDead) << status;
  }
  EXPECT_EQ(classify_status(400, "", "missing field").error, "HTTP 400: missing field");
}

}  // namespace
}  // namespace tidemark::connectors::http
