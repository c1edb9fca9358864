#include "pipeline/core/validate.hpp"
#include "tests/support/built_in_record.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <variant>

#include "pipeline/core/quoted_value.hpp"

namespace tidemark::pipeline {
namespace {

Field text_field(std::string text) { return Field{std::move(text), FieldKind::kString}; }
Field number_field(std::string text) { return Field{std::move(text), FieldKind::kNumber}; }
Field other_field(std::string text) { return Field{std::move(text), FieldKind::kOther}; }

DecodedRecord good_record() {
  DecodedRecord decoded;
  decoded.raw = "t-1,3,130.00";
  decoded.field(pipeline::built_in_field::kTransactionId) = text_field("t-1");
  decoded.field(pipeline::built_in_field::kSourceRevision) = text_field("3");
  decoded.field(pipeline::built_in_field::kAmount) = text_field("130.00");
  return decoded;
}

// The detail of a rejected record, or a marker that makes an unexpected acceptance visible.
std::string rejection_of(const DecodedRecord& decoded) {
  const Validated result = validate(decoded);
  if (const auto* rejection = std::get_if<Rejection>(&result)) return rejection->detail;
  return "<accepted>";
}

Record accepted(const DecodedRecord& decoded) {
  const Validated result = validate(decoded);
  if (const auto* rejection = std::get_if<Rejection>(&result)) {
    ADD_FAILURE() << "rejected: " << rejection->detail;
    return {};
  }
  return std::get<Record>(result);
}

std::int64_t cents_of(std::string_view text) {
  const auto result = parse_amount(text);
  if (const auto* rejection = std::get_if<Rejection>(&result)) {
    ADD_FAILURE() << "amount " << text << " rejected: " << rejection->detail;
    return 0;
  }
  return std::get<Amount>(result).cents;
}

bool amount_rejected(std::string_view text) { return std::holds_alternative<Rejection>(parse_amount(text)); }

std::int64_t micros_of(std::string_view text) {
  const auto result = parse_timestamp(text);
  if (const auto* rejection = std::get_if<Rejection>(&result)) {
    ADD_FAILURE() << "timestamp " << text << " rejected: " << rejection->detail;
    return 0;
  }
  return std::get<std::int64_t>(result);
}

bool timestamp_rejected(std::string_view text) {
  return std::holds_alternative<Rejection>(parse_timestamp(text));
}

TEST(Validate, AcceptsAMinimalRecordInCanonicalForm) {
  const Record record = accepted(good_record());
  EXPECT_EQ(record.transaction_id, "t-1");
  EXPECT_EQ(record.source_revision, 3);
  EXPECT_EQ(record.amount.cents, 13000);
  EXPECT_FALSE(record.account_id);
  EXPECT_FALSE(record.occurred_at_us);
}

TEST(Validate, DecodeErrorBecomesTheRejectionDetail) {
  DecodedRecord decoded = good_record();
  decoded.decode_error = "unterminated quoted field";
  EXPECT_EQ(rejection_of(decoded), "unterminated quoted field");
}

TEST(Validate, MissingRequiredFieldsAreNamed) {
  DecodedRecord no_id = good_record();
  no_id.field(pipeline::built_in_field::kTransactionId).reset();
  EXPECT_EQ(rejection_of(no_id), "transaction_id: missing");
  DecodedRecord no_revision = good_record();
  no_revision.field(pipeline::built_in_field::kSourceRevision).reset();
  EXPECT_EQ(rejection_of(no_revision), "source_revision: missing");
  DecodedRecord no_amount = good_record();
  no_amount.field(pipeline::built_in_field::kAmount).reset();
  EXPECT_EQ(rejection_of(no_amount), "amount: missing (required)");
}

TEST(Validate, EmptyRequiredFieldsAreRejected) {
  DecodedRecord id = good_record();
  id.field(pipeline::built_in_field::kTransactionId) = text_field("");
  EXPECT_EQ(rejection_of(id), "transaction_id: empty");
  DecodedRecord revision = good_record();
  revision.field(pipeline::built_in_field::kSourceRevision) = text_field("");
  EXPECT_EQ(rejection_of(revision), "source_revision: empty");
  DecodedRecord amount = good_record();
  amount.field(pipeline::built_in_field::kAmount) = text_field("");
  EXPECT_EQ(rejection_of(amount), "amount: empty");
}

TEST(Validate, TransactionIdMustBeAJsonString) {
  DecodedRecord number = good_record();
  number.field(pipeline::built_in_field::kTransactionId) = number_field("42");
  EXPECT_EQ(rejection_of(number), "transaction_id: must be a string, not the number 42");
  DecodedRecord other = good_record();
  other.field(pipeline::built_in_field::kTransactionId) = other_field("{}");
  EXPECT_EQ(rejection_of(other), "transaction_id: must be a string, not the JSON value {}");
}

TEST(Validate, TransactionIdLengthCountsCodePointsNotBytes) {
  DecodedRecord ok = good_record();
  ok.field(pipeline::built_in_field::kTransactionId) = text_field(std::string(128, 'a'));
  EXPECT_EQ(accepted(ok).transaction_id.size(), 128u);

  DecodedRecord too_long = good_record();
  too_long.field(pipeline::built_in_field::kTransactionId) = text_field(std::string(129, 'a'));
  EXPECT_EQ(rejection_of(too_long),
            "transaction_id: more than 128 characters (129) in " + quoted_value(std::string(129, 'a')));

  // 128 two-byte characters (256 bytes) and 128 four-byte characters are still 128 characters.
  std::string two_byte;
  std::string four_byte;
  for (int i = 0; i < 128; ++i) {
    two_byte += "\xC3\xA9";           // é
    four_byte += "\xF0\x9F\x98\x80";  // U+1F600
  }
  DecodedRecord wide = good_record();
  wide.field(pipeline::built_in_field::kTransactionId) = text_field(two_byte);
  EXPECT_EQ(accepted(wide).transaction_id, two_byte);
  wide.field(pipeline::built_in_field::kTransactionId) = text_field(four_byte);
  EXPECT_EQ(accepted(wide).transaction_id, four_byte);
  wide.field(pipeline::built_in_field::kTransactionId) = text_field(four_byte + "\xC3\xA9");
  EXPECT_EQ(rejection_of(wide), "transaction_id: more than 128 characters (129) in " + quoted_value(four_byte));
}

TEST(Validate, TransactionIdAcceptsWellFormedUtf8Boundaries) {
  for (const std::string id : {"~", "\xC2\xA0", "\xDF\xBF", "\xE0\xA0\x80",
                               "\xED\x9F\xBF", "\xEE\x80\x80", "\xEF\xBF\xBF", "\xF0\x90\x80\x80",
                               "\xF4\x8F\xBF\xBF"}) {
    DecodedRecord decoded = good_record();
    decoded.field(pipeline::built_in_field::kTransactionId) = text_field(id);
    EXPECT_EQ(rejection_of(decoded), "<accepted>") << "id bytes: " << id.size();
  }
}

TEST(Validate, TransactionIdRejectsMalformedUtf8) {
  const std::string cases[] = {
      "\x80",              // lone continuation byte
      "\xC0\xAF",          // overlong '/'
      "\xC1\xBF",          // overlong
      "\xE0\x80\xAF",      // overlong three-byte
      "\xF0\x80\x80\xAF",  // overlong four-byte
      "\xED\xA0\x80",      // surrogate U+D800
      "\xED\xBF\xBF",      // surrogate U+DFFF
      "\xF4\x90\x80\x80",  // U+110000
      "\xF5\x80\x80\x80",  // lead byte above F4
      "\xFF",              // never valid
      "\xC3",              // truncated two-byte
      "\xE2\x82",          // truncated three-byte
      "\xF0\x9F\x98",      // truncated four-byte
      "\xE2\x28\xA1",      // bad continuation
  };
  for (const std::string& bad : cases) {
    DecodedRecord decoded = good_record();
    decoded.field(pipeline::built_in_field::kTransactionId) = text_field("ab" + bad);
    EXPECT_EQ(rejection_of(decoded), "transaction_id: invalid UTF-8 at byte 2 in " + quoted_value("ab" + bad))
        << "case of " << bad.size() << " bytes";
  }
}

TEST(Validate, TransactionIdRejectsC0DelAndC1ControlCharacters) {
  for (const std::string& control : {std::string(1, '\0'), std::string("\x01"), std::string("\t"), std::string("\n"),
                                    std::string("\x1F"), std::string("\x7F"), std::string("\xC2\x80"),
                                    std::string("\xC2\x9F")}) {
    DecodedRecord decoded = good_record();
    decoded.field(pipeline::built_in_field::kTransactionId) = text_field("abc" + control + "d");
    EXPECT_EQ(rejection_of(decoded),
              "transaction_id: control character at byte 3 in " + quoted_value("abc" + control + "d"));
  }
  DecodedRecord space = good_record();
  space.field(pipeline::built_in_field::kTransactionId) = text_field("a b");
  EXPECT_EQ(rejection_of(space), "<accepted>");
}

// A byte order mark past the start of a file (`cat a.csv b.csv`) became part
// of a key: U+FEFF n5 and n5 were two transactions. One at the start of a text value is
// refused; U+FEFF inside one (a zero-width no-break space) is the text's own.
TEST(Validate, TransactionIdRejectsALeadingByteOrderMark) {
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kTransactionId) = text_field("\xEF\xBB\xBFn5");
  EXPECT_EQ(rejection_of(decoded),
            "transaction_id: starts with a byte order mark (U+FEFF), accepted only at the start of a file in "
            "\"\\xEF\\xBB\\xBFn5\"");
  decoded.field(pipeline::built_in_field::kTransactionId) = text_field("n\xEF\xBB\xBF" "5");
  EXPECT_EQ(rejection_of(decoded), "<accepted>");
}

TEST(Validate, RevisionBoundaries) {
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kSourceRevision) = text_field("0");
  EXPECT_EQ(accepted(decoded).source_revision, 0);
  decoded.field(pipeline::built_in_field::kSourceRevision) = text_field("9223372036854775807");
  EXPECT_EQ(accepted(decoded).source_revision, INT64_MAX);
  decoded.field(pipeline::built_in_field::kSourceRevision) = text_field("0009223372036854775807");
  EXPECT_EQ(accepted(decoded).source_revision, INT64_MAX);
  decoded.field(pipeline::built_in_field::kSourceRevision) = text_field("9223372036854775808");
  EXPECT_EQ(rejection_of(decoded), "source_revision: greater than 9223372036854775807 in \"9223372036854775808\"");
  decoded.field(pipeline::built_in_field::kSourceRevision) = text_field("99999999999999999999999");
  EXPECT_EQ(rejection_of(decoded),
            "source_revision: greater than 9223372036854775807 in \"99999999999999999999999\"");
}

TEST(Validate, RevisionIsDecimalDigitsOnly) {
  for (const std::string bad : {"-1", "+1", "1.0", "1e3", " 1", "1 ", "0x10", "one"}) {
    DecodedRecord decoded = good_record();
    decoded.field(pipeline::built_in_field::kSourceRevision) = text_field(bad);
    EXPECT_EQ(rejection_of(decoded), "source_revision: not an integer of decimal digits only in \"" + bad + "\"");
  }
}

TEST(Validate, RevisionMayBeAJsonNumberOrStringOfDigits) {
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kSourceRevision) = number_field("17");
  EXPECT_EQ(accepted(decoded).source_revision, 17);
  decoded.field(pipeline::built_in_field::kSourceRevision) = text_field("17");
  EXPECT_EQ(accepted(decoded).source_revision, 17);
  decoded.field(pipeline::built_in_field::kSourceRevision) = number_field("1.0");
  EXPECT_EQ(rejection_of(decoded), "source_revision: not an integer of decimal digits only in \"1.0\"");
  decoded.field(pipeline::built_in_field::kSourceRevision) = number_field("1e3");
  EXPECT_EQ(rejection_of(decoded), "source_revision: not an integer of decimal digits only in \"1e3\"");
  decoded.field(pipeline::built_in_field::kSourceRevision) = other_field("true");
  EXPECT_EQ(rejection_of(decoded), "source_revision: must be an integer, not the JSON value true");
}

TEST(ParseAmount, EqualValuesHaveEqualCents) {
  EXPECT_EQ(cents_of("130"), 13000);
  EXPECT_EQ(cents_of("130.0"), 13000);
  EXPECT_EQ(cents_of("130.00"), 13000);
  EXPECT_EQ(cents_of("+130.00"), 13000);
  EXPECT_EQ(cents_of("007.50"), 750);
  EXPECT_EQ(cents_of("0.5"), 50);
  EXPECT_EQ(cents_of("-0.05"), -5);
  EXPECT_EQ(cents_of("-0.00"), 0);
  EXPECT_EQ(cents_of("-0"), 0);
  EXPECT_EQ(cents_of("0"), 0);
}

TEST(ParseAmount, AcceptsTheNumericTwelveTwoExtremes) {
  EXPECT_EQ(cents_of("9999999999.99"), 999999999999);
  EXPECT_EQ(cents_of("-9999999999.99"), -999999999999);
  // Leading zeros are not significant digits.
  EXPECT_EQ(cents_of("0000000000012.00"), 1200);
  EXPECT_EQ(cents_of("00000000009999999999.99"), 999999999999);
}

TEST(ParseAmount, RejectsWhatNumericTwelveTwoCannotHoldExactly) {
  EXPECT_TRUE(amount_rejected("10000000000.00"));
  EXPECT_TRUE(amount_rejected("-10000000000"));
  EXPECT_TRUE(amount_rejected("130.001"));
  EXPECT_TRUE(amount_rejected("130.000"));
  EXPECT_TRUE(amount_rejected("0.001"));
}

TEST(ParseAmount, RejectsNonPlainDecimals) {
  for (const char* bad : {"", "NaN", "nan", "Infinity", "-Infinity", "inf", "1e3", "1E3", "1.5e2", " 1", "1 ",
                          "1,00", ".5", "5.", "-", "+", "--1", "+-1", "1.2.3", "0x10", "١٢"}) {
    EXPECT_TRUE(amount_rejected(bad)) << bad;
  }
}

TEST(ParseAmount, DetailsNameTheRuleAndQuoteTheValue) {
  EXPECT_EQ(std::get<Rejection>(parse_amount("130.001")).detail, "more than 2 fraction digits in \"130.001\"");
  EXPECT_EQ(std::get<Rejection>(parse_amount("10000000000")).detail,
            "more than 10 integer digits in \"10000000000\"");
  EXPECT_EQ(std::get<Rejection>(parse_amount("1e3")).detail,
            "not a plain decimal ([+-]digits[.1-2 digits]) in \"1e3\"");
  // Unprintable bytes are escaped so the detail is always storable text.
  EXPECT_EQ(std::get<Rejection>(parse_amount(std::string("1\0\xFF", 3))).detail,
            "not a plain decimal ([+-]digits[.1-2 digits]) in \"1\\x00\\xFF\"");
}

TEST(Validate, AmountDetailNamesTheField) {
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kAmount) = text_field("130.001");
  EXPECT_EQ(rejection_of(decoded), "amount: more than 2 fraction digits in \"130.001\"");
}

TEST(Validate, AmountMayBeAJsonNumberOrStringWithTheSameRules) {
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kAmount) = number_field("130.5");
  EXPECT_EQ(accepted(decoded).amount.cents, 13050);
  decoded.field(pipeline::built_in_field::kAmount) = text_field("130.5");
  EXPECT_EQ(accepted(decoded).amount.cents, 13050);
  decoded.field(pipeline::built_in_field::kAmount) = number_field("1e3");
  EXPECT_NE(rejection_of(decoded).find("amount: "), std::string::npos);
  decoded.field(pipeline::built_in_field::kAmount) = number_field("130.001");
  EXPECT_EQ(rejection_of(decoded), "amount: more than 2 fraction digits in \"130.001\"");
  decoded.field(pipeline::built_in_field::kAmount) = other_field("true");
  EXPECT_EQ(rejection_of(decoded), "amount: must be a decimal (a number or a string), not the JSON value true");
}

TEST(Validate, AccountIdIsOptionalAndEmptyMeansAbsent) {
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kAccountId) = text_field("");
  EXPECT_FALSE(accepted(decoded).account_id);
  decoded.field(pipeline::built_in_field::kAccountId) = text_field("acc-\xC3\xA9");
  EXPECT_EQ(accepted(decoded).account_id, "acc-\xC3\xA9");
}

TEST(Validate, AccountIdFollowsTheTransactionIdRules) {
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kAccountId) = text_field("acc\x01");
  EXPECT_EQ(rejection_of(decoded), "account_id: control character at byte 3 in \"acc\\x01\"");
  decoded.field(pipeline::built_in_field::kAccountId) = text_field("acc\xC0\xAF");
  EXPECT_EQ(rejection_of(decoded), "account_id: invalid UTF-8 at byte 3 in \"acc\\xC0\\xAF\"");
  decoded.field(pipeline::built_in_field::kAccountId) = text_field(std::string(129, 'x'));
  EXPECT_EQ(rejection_of(decoded),
            "account_id: more than 128 characters (129) in " + quoted_value(std::string(129, 'x')));
  decoded.field(pipeline::built_in_field::kAccountId) = number_field("12");
  EXPECT_EQ(rejection_of(decoded), "account_id: must be a string, not the number 12");
}

TEST(Validate, OccurredAtIsOptionalAndEmptyMeansAbsent) {
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kOccurredAt) = text_field("");
  EXPECT_FALSE(accepted(decoded).occurred_at_us);
  decoded.field(pipeline::built_in_field::kOccurredAt) = text_field("1970-01-01T00:00:01Z");
  EXPECT_EQ(accepted(decoded).occurred_at_us, 1'000'000);
  decoded.field(pipeline::built_in_field::kOccurredAt) = number_field("1700000000");
  EXPECT_EQ(rejection_of(decoded), "occurred_at: must be a string, not the number 1700000000");
  decoded.field(pipeline::built_in_field::kOccurredAt) = text_field("2024-02-30T00:00:00Z");
  EXPECT_EQ(rejection_of(decoded), "occurred_at: day out of range in \"2024-02-30T00:00:00Z\"");
}

TEST(Validate, FieldsAreCheckedInOrderAndOtherFieldsIgnored) {
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kSourceRevision) = text_field("x");
  decoded.field(pipeline::built_in_field::kAmount) = text_field("y");
  EXPECT_EQ(rejection_of(decoded).rfind("source_revision: ", 0), 0u);
}

TEST(ParseTimestamp, KnownInstants) {
  EXPECT_EQ(micros_of("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(micros_of("2024-05-01T08:00:00Z"), 1714550400LL * 1'000'000);
  EXPECT_EQ(micros_of("1969-12-31T23:59:59.999999Z"), -1);
  EXPECT_EQ(micros_of("2000-01-01T00:00:00.5Z"), 946684800LL * 1'000'000 + 500'000);
}

TEST(ParseTimestamp, OffsetsDenotingTheSameInstantAreEqual) {
  const std::int64_t utc = micros_of("2024-05-01T08:00:00Z");
  EXPECT_EQ(micros_of("2024-05-01T10:00:00+02:00"), utc);
  EXPECT_EQ(micros_of("2024-05-01T02:30:00-05:30"), utc);
  EXPECT_EQ(micros_of("2024-05-01t08:00:00z"), utc);
  EXPECT_EQ(micros_of("2024-05-01T08:00:00.000000+00:00"), utc);
  EXPECT_EQ(micros_of("2024-05-01T08:00:00-00:00"), utc);
  EXPECT_EQ(micros_of("2024-05-02T07:59:00+23:59"), utc);
  // Crosses a year boundary backwards.
  EXPECT_EQ(micros_of("2023-12-31T23:00:00-01:00"), micros_of("2024-01-01T00:00:00Z"));
}

TEST(ParseTimestamp, FractionsUpToSixDigits) {
  const std::int64_t base = micros_of("2024-05-01T08:00:00Z");
  EXPECT_EQ(micros_of("2024-05-01T08:00:00.1Z"), base + 100'000);
  EXPECT_EQ(micros_of("2024-05-01T08:00:00.123456Z"), base + 123'456);
  EXPECT_EQ(micros_of("2024-05-01T08:00:00.000001Z"), base + 1);
  EXPECT_EQ(std::get<Rejection>(parse_timestamp("2024-05-01T08:00:00.1234567Z")).detail,
            "more than 6 fraction digits in \"2024-05-01T08:00:00.1234567Z\"");
  EXPECT_TRUE(timestamp_rejected("2024-05-01T08:00:00.Z"));
}

// Found by the validator fuzz target: an offset carried 0001-01-01T01:00:00+02:00 to year 0
// in UTC, whose canonical form ("0000-12-31T23:00:00.000000Z") did not parse back.
TEST(ParseTimestamp, TheOffsetMayNotCarryAnInstantPastYear1Or9999InUtc) {
  EXPECT_EQ(format_timestamp(micros_of("0001-01-01T01:00:00+01:00")), "0001-01-01T00:00:00.000000Z");
  EXPECT_EQ(format_timestamp(micros_of("9999-12-31T22:59:59.999999-01:00")), "9999-12-31T23:59:59.999999Z");
  EXPECT_EQ(std::get<Rejection>(parse_timestamp("0001-01-01T01:00:00+02:00")).detail,
            "outside 0001-01-01T00:00:00Z ... 9999-12-31T23:59:59.999999Z in UTC in \"0001-01-01T01:00:00+02:00\"");
  EXPECT_TRUE(timestamp_rejected("9999-12-31T23:00:00-01:00"));
  DecodedRecord decoded = good_record();
  decoded.field(pipeline::built_in_field::kOccurredAt) = text_field("0001-01-01T00:00:00.999999+00:01");
  EXPECT_EQ(rejection_of(decoded),
            "occurred_at: outside 0001-01-01T00:00:00Z ... 9999-12-31T23:59:59.999999Z in UTC in "
            "\"0001-01-01T00:00:00.999999+00:01\"");
}

TEST(ParseTimestamp, LeapDays) {
  EXPECT_EQ(micros_of("2024-02-29T00:00:00Z") + 86'400LL * 1'000'000, micros_of("2024-03-01T00:00:00Z"));
  EXPECT_EQ(micros_of("2000-02-29T12:00:00Z") + 12 * 3600LL * 1'000'000, micros_of("2000-03-01T00:00:00Z"));
  EXPECT_TRUE(timestamp_rejected("2023-02-29T00:00:00Z"));
  EXPECT_TRUE(timestamp_rejected("1900-02-29T00:00:00Z"));
}

TEST(ParseTimestamp, RejectsOutOfRangeParts) {
  for (const char* bad : {"0000-01-01T00:00:00Z", "2024-00-01T00:00:00Z", "2024-13-01T00:00:00Z",
                          "2024-01-00T00:00:00Z", "2024-01-32T00:00:00Z", "2024-04-31T00:00:00Z",
                          "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z", "2024-01-01T00:00:60Z",
                          "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00+00:60"}) {
    EXPECT_TRUE(timestamp_rejected(bad)) << bad;
  }
  EXPECT_EQ(std::get<Rejection>(parse_timestamp("2016-12-31T23:59:60Z")).detail,
            "second out of range in \"2016-12-31T23:59:60Z\"");
}

TEST(ParseTimestamp, RejectsOtherShapes) {
  for (const char* bad : {"", "2024-05-01", "2024-05-01T08:00Z", "2024-05-01 08:00:00Z", "2024-05-01T08:00:00",
                          "2024-5-01T08:00:00Z", "24-05-01T08:00:00Z", "2024-05-01T08:00:00+0200",
                          "2024-05-01T08:00:00+02", "2024-05-01T08:00:00 Z", "2024-05-01T08:00:00Z ",
                          " 2024-05-01T08:00:00Z", "2024-05-01T08:00:00UTC", "+2024-05-01T08:00:00Z",
                          "1714550400"}) {
    EXPECT_TRUE(timestamp_rejected(bad)) << bad;
  }
  EXPECT_EQ(std::get<Rejection>(parse_timestamp("2024-05-01T08:00:00")).detail,
            "no UTC offset (Z or +HH:MM) in \"2024-05-01T08:00:00\"");
}

TEST(FormatTimestamp, CanonicalUtcWithMicroseconds) {
  EXPECT_EQ(format_timestamp(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(format_timestamp(-1), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(format_timestamp(micros_of("2024-05-01T10:00:00.5+02:00")), "2024-05-01T08:00:00.500000Z");
}

TEST(FormatTimestamp, RoundTripsEveryParsedInstantAcrossTheYearRange) {
  for (const char* text : {"0001-01-01T00:00:00.000000Z", "9999-12-31T23:59:59.999999Z",
                           "1600-02-29T13:14:15.161718Z", "2024-02-29T23:59:59.000001Z",
                           "1969-07-20T20:17:40.000000Z", "2100-03-01T00:00:00.000000Z"}) {
    EXPECT_EQ(format_timestamp(micros_of(text)), text);
  }
  // Every day of four centuries survives parse -> format.
  const std::int64_t day = 86'400LL * 1'000'000;
  const std::int64_t start = micros_of("1900-01-01T00:00:00Z");
  for (std::int64_t d = 0; d < 146'097; ++d) {
    const std::string text = format_timestamp(start + d * day);
    ASSERT_EQ(micros_of(text), start + d * day) << text;
  }
}

}  // namespace
}  // namespace tidemark::pipeline
