// JSON Lines decoding: exact number text, kinds, absent fields and every kind of bad line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/core/validate.hpp"
#include "tests/support/built_in_record.hpp"
#include "connectors/file/jsonl_decoder.hpp"
#include "connectors/file/record_stream.hpp"

namespace tidemark::connectors::file {
namespace {

using pipeline::DecodedRecord;
using pipeline::FieldKind;

DecodedRecord decode_line(std::string_view line) { return decode_jsonl_line(line, {"in.jsonl", 1, 0, line.size()}); }

std::string error_of(const DecodedRecord& record) {
  EXPECT_TRUE(record.decode_error.has_value()) << "line decoded: " << record.raw;
  return record.decode_error.value_or("");
}

TEST(JsonlDecoder, NumbersKeepTheirExactSourceText) {
  const auto record = decode_line(
      R"({"transaction_id":"t1","source_revision":9223372036854775807,"amount":1234567890.12,"account_id":"a"})");
  ASSERT_FALSE(record.decode_error) << *record.decode_error;
  ASSERT_TRUE(record.field(pipeline::built_in_field::kAmount));
  EXPECT_EQ(record.field(pipeline::built_in_field::kAmount)->text, "1234567890.12");
  EXPECT_EQ(record.field(pipeline::built_in_field::kAmount)->kind, FieldKind::kNumber);
  EXPECT_EQ(record.field(pipeline::built_in_field::kSourceRevision)->text, "9223372036854775807");
  EXPECT_EQ(record.field(pipeline::built_in_field::kSourceRevision)->kind, FieldKind::kNumber);

  for (std::string_view number : {"1e3", "130.0", "-0.10", "0.1000000000000000055511151231257827",
                                  "184467440737095516160", "1E+2"}) {
    const auto r = decode_line(R"({"amount":)" + std::string(number) + "}");
    ASSERT_FALSE(r.decode_error) << *r.decode_error;
    EXPECT_EQ(r.field(pipeline::built_in_field::kAmount)->text, number);
    EXPECT_EQ(r.field(pipeline::built_in_field::kAmount)->kind, FieldKind::kNumber);
  }
}

TEST(JsonlDecoder, StringsAreUnescapedUtf8) {
  const auto record = decode_line(R"({"transaction_id":"t\"1\u00e9\n","amount":"10.50","occurred_at":"2024-05-01T10:00:00Z"})");
  ASSERT_FALSE(record.decode_error) << *record.decode_error;
  EXPECT_EQ(record.field(pipeline::built_in_field::kTransactionId)->text, "t\"1\xC3\xA9\n");
  EXPECT_EQ(record.field(pipeline::built_in_field::kTransactionId)->kind, FieldKind::kString);
  EXPECT_EQ(record.field(pipeline::built_in_field::kAmount)->text, "10.50");
  EXPECT_EQ(record.field(pipeline::built_in_field::kAmount)->kind, FieldKind::kString);
  EXPECT_EQ(record.field(pipeline::built_in_field::kOccurredAt)->text, "2024-05-01T10:00:00Z");
}

TEST(JsonlDecoder, NullAndMissingFieldsAreAbsent) {
  const auto record = decode_line(R"({"transaction_id":"t1","account_id":null})");
  ASSERT_FALSE(record.decode_error);
  EXPECT_FALSE(record.field(pipeline::built_in_field::kAccountId));
  EXPECT_FALSE(record.field(pipeline::built_in_field::kAmount));
  EXPECT_FALSE(record.field(pipeline::built_in_field::kOccurredAt));
}

TEST(JsonlDecoder, BoolsObjectsAndArraysKeepTheirKindAndJsonText) {
  const auto record = decode_line(R"({"transaction_id":true,"source_revision":false,"amount":{"v":1},"account_id":[1,2]})");
  ASSERT_FALSE(record.decode_error) << *record.decode_error;
  EXPECT_EQ(record.field(pipeline::built_in_field::kTransactionId)->kind, FieldKind::kBoolean);
  EXPECT_EQ(record.field(pipeline::built_in_field::kTransactionId)->text, "true");
  EXPECT_EQ(record.field(pipeline::built_in_field::kSourceRevision)->text, "false");
  EXPECT_EQ(record.field(pipeline::built_in_field::kAmount)->kind, FieldKind::kJson);
  EXPECT_EQ(record.field(pipeline::built_in_field::kAmount)->text, R"({"v":1})");
  EXPECT_EQ(record.field(pipeline::built_in_field::kAccountId)->kind, FieldKind::kJson);
  EXPECT_EQ(record.field(pipeline::built_in_field::kAccountId)->text, "[1,2]");
}

TEST(JsonlDecoder, OtherFieldsAreIgnoredAtAnyDepthIncludingNestedContractNames) {
  const auto record = decode_line(
      R"({"meta":{"amount":"nested","deep":[{"transaction_id":1},[[null]]]},"amount":5,"x":"y","tags":[true]})");
  ASSERT_FALSE(record.decode_error) << *record.decode_error;
  EXPECT_EQ(record.field(pipeline::built_in_field::kAmount)->text, "5");
  EXPECT_FALSE(record.field(pipeline::built_in_field::kTransactionId));
}

TEST(JsonlDecoder, DuplicatedContractFieldIsADecodeError) {
  EXPECT_EQ(error_of(decode_line(R"({"amount":1,"amount":2})")), "jsonl: field \"amount\" appears more than once");
  EXPECT_EQ(error_of(decode_line(R"({"amount":null,"amount":2})")), "jsonl: field \"amount\" appears more than once");
  EXPECT_FALSE(decode_line(R"({"note":1,"note":2})").decode_error);  // not a contract field
}

TEST(JsonlDecoder, LinesThatAreNotOneObjectAreDecodeErrors) {
  EXPECT_EQ(error_of(decode_line("[1,2]")), "jsonl: line is not a JSON object (found: array)");
  EXPECT_EQ(error_of(decode_line("42")), "jsonl: line is not a JSON object (found: number)");
  EXPECT_EQ(error_of(decode_line(R"("text")")), "jsonl: line is not a JSON object (found: string)");
  EXPECT_EQ(error_of(decode_line("null")), "jsonl: line is not a JSON object (found: null)");
  EXPECT_EQ(error_of(decode_line("true")), "jsonl: line is not a JSON object (found: true)");
  EXPECT_EQ(error_of(decode_line(R"({"amount":1} {"amount":2})")),
            "jsonl: malformed JSON at column 14: unexpected '{' after the JSON value");
  EXPECT_EQ(error_of(decode_line(R"({"amount":1}x)")), "jsonl: malformed JSON at column 13: unexpected 'x' after the JSON value");
  EXPECT_EQ(error_of(decode_line(R"({"amount":1,})")).rfind("jsonl: malformed JSON at column", 0), 0u);
  EXPECT_EQ(error_of(decode_line(R"({"amount":01})")).rfind("jsonl: malformed JSON at column", 0), 0u);
  EXPECT_EQ(error_of(decode_line("{amount:1}")).rfind("jsonl: malformed JSON at column", 0), 0u);
  EXPECT_EQ(error_of(decode_line("   ")).rfind("jsonl: malformed JSON at column", 0), 0u);
  EXPECT_EQ(error_of(decode_line("{\"transaction_id\":\"\xFF\"}")).rfind("jsonl: malformed JSON", 0), 0u);
}

// Not valid JSON is malformed, whatever its first bytes promised: the reason names the fault
// and its byte column, and "not a JSON object" is only for a valid value of another kind.
TEST(JsonlDecoder, InvalidJsonIsMalformedAtItsFaultEvenWhenItStartsLikeANonObject) {
  EXPECT_EQ(error_of(decode_line("[1 true]")), "jsonl: malformed JSON at column 4: syntax error at 't'");
  EXPECT_EQ(error_of(decode_line("[NaN]")), "jsonl: malformed JSON at column 2: syntax error at 'N'");
  EXPECT_EQ(error_of(decode_line("1]")), "jsonl: malformed JSON at column 2: unexpected ']' after the JSON value");
  EXPECT_EQ(error_of(decode_line(R"(""x)")), "jsonl: malformed JSON at column 3: unexpected 'x' after the JSON value");
  EXPECT_EQ(error_of(decode_line("[\"a\xFF\"]")), "jsonl: malformed JSON at column 4: syntax error at byte 0xFF");
  EXPECT_EQ(error_of(decode_line("[1,")), "jsonl: malformed JSON at column 4: incomplete JSON");
  EXPECT_EQ(error_of(decode_line(R"("\u12x")")).rfind("jsonl: malformed JSON at column 6: ", 0), 0u);
  // A fault after a duplicated field is the line's fault too.
  EXPECT_EQ(error_of(decode_line(R"({"amount":1,"amount":2,})")), "jsonl: malformed JSON at column 24: syntax error at '}'");
  // Valid JSON of another kind, however long, is named by its kind.
  EXPECT_EQ(error_of(decode_line(R"([{"amount":1},[true,null],"x"])")), "jsonl: line is not a JSON object (found: array)");
  EXPECT_EQ(error_of(decode_line(R"( "" )")), "jsonl: line is not a JSON object (found: string)");
}

TEST(JsonlDecoder, TruncatedLineIsADecodeErrorWithItsRawTextAndNoFields) {
  const auto record = decode_line(R"({"transaction_id":"t1","amount":12)");
  EXPECT_EQ(error_of(record).rfind("jsonl: malformed JSON at column", 0), 0u);
  EXPECT_EQ(record.raw, R"({"transaction_id":"t1","amount":12)");
  EXPECT_FALSE(record.field(pipeline::built_in_field::kTransactionId));  // an undecodable record carries no fields
  EXPECT_FALSE(record.field(pipeline::built_in_field::kAmount));
}

TEST(JsonlDecoder, WhitespaceAroundTheObjectIsAllowed) {
  const auto record = decode_line(" \t{ \"amount\" : 7 } \t");
  ASSERT_FALSE(record.decode_error) << *record.decode_error;
  EXPECT_EQ(record.field(pipeline::built_in_field::kAmount)->text, "7");
}

TEST(JsonlDecoder, DeepNestingIsBoundedAndADecodeError) {
  const auto nested = [](std::size_t depth) {
    return R"({"note":)" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  EXPECT_FALSE(decode_line(nested(kMaxJsonDepth)).decode_error);
  EXPECT_EQ(error_of(decode_line(nested(kMaxJsonDepth + 1))), "jsonl: nested deeper than 64 levels");
  EXPECT_EQ(error_of(decode_line(nested(100000))), "jsonl: nested deeper than 64 levels");
}

TEST(JsonlDecoder, TextDecodingSkipsEmptyLinesAndHandlesCrlf) {
  const std::string text = "{\"amount\":1}\r\n\r\n\n{\"amount\":\"2\"}\r\nnot json\r\n{\"amount\":3}";
  const auto records = decode_text(Format::kJsonl, text, "in.jsonl");
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].field(pipeline::built_in_field::kAmount)->text, "1");
  EXPECT_EQ(records[0].raw, "{\"amount\":1}");
  EXPECT_EQ(records[0].position.line, 1u);
  EXPECT_EQ(records[0].position.end_offset, 14u);
  EXPECT_EQ(records[1].field(pipeline::built_in_field::kAmount)->text, "2");
  EXPECT_EQ(records[1].position.line, 4u);
  EXPECT_EQ(records[1].position.offset, 17u);
  EXPECT_TRUE(records[2].decode_error);
  EXPECT_EQ(records[2].raw, "not json");
  EXPECT_EQ(records[2].position.line, 5u);
  EXPECT_EQ(records[3].field(pipeline::built_in_field::kAmount)->text, "3");
  EXPECT_EQ(records[3].position.line, 6u);
  EXPECT_EQ(records[3].position.end_offset, text.size());
}

TEST(JsonlDecoder, TextDecodingSkipsALeadingBom) {
  const auto records = decode_text(Format::kJsonl, "\xEF\xBB\xBF{\"amount\":1}\n", "in.jsonl");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].decode_error);
  EXPECT_EQ(records[0].position.offset, 3u);
}

// A BOM at the start of a later line (a second file pasted onto the first)
// is named as the record's fault, not as a JSON syntax error at 0xEF.
TEST(JsonlDecoder, ABomPastTheStartOfTheFileMakesItsLineADecodeError) {
  const auto records = decode_text(
      Format::kJsonl, "\xEF\xBB\xBF{\"amount\":1}\n\xEF\xBB\xBF{\"amount\":2}\n{\"amount\":3}\n", "in.jsonl");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_FALSE(records[0].decode_error);
  EXPECT_EQ(records[1].decode_error,
            "jsonl: starts with a byte order mark (U+FEFF), accepted only at the start of a file");
  EXPECT_EQ(records[1].position.line, 2u);
  EXPECT_FALSE(records[2].decode_error);
}

TEST(RecordStream, OverlongJsonLineBecomesAnErrorAndTheNextLineDecodes) {
  RecordStream stream(Format::kJsonl, built_in_layout(), 16);
  stream.start_file("in.jsonl");
  stream.append(R"({"note":")" + std::string(40, 'x') + "\"}\n{\"amount\":1}\n");
  const auto first = stream.next(true);
  ASSERT_TRUE(first);
  EXPECT_EQ(error_of(*first), "record longer than 16 bytes");
  EXPECT_EQ(first->position.end_offset, 52u);
  const auto second = stream.next(true);
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->decode_error);
  EXPECT_EQ(second->position.line, 2u);
  EXPECT_FALSE(stream.next(true));
}

// A declared entity's layout: its own field names, each JSON kind, objects and arrays as JSON
// text rebuilt from the parse, and undeclared members when the layout asks for them.
TEST(JsonlDecoder, ADeclaredLayoutDeliversItsFieldsWithTheirKindsAndUndeclaredMembers) {
  pipeline::RecordLayout layout;
  layout.names = {"order_id", "version", "paid", "meta", "tags", "gone"};
  layout.required = {true, true, false, false, false, false};
  layout.undeclared = true;
  const auto record = decode_jsonl_line(
      R"({"order_id":"o\u00e91","version":3,"paid":true,"meta":{"a":[1.50,"x\"y",null,{}],"b":{"c":false}},)"
      R"("tags":[],"gone":null,"note":"n","deep":{"k":[2]},"nil":null})",
      {"in.jsonl", 1, 0, 0}, layout);
  ASSERT_FALSE(record.decode_error) << *record.decode_error;
  ASSERT_EQ(record.fields.size(), 6u);
  EXPECT_EQ(record.field(0)->text, "o\xC3\xA9" "1");
  EXPECT_EQ(record.field(1)->kind, FieldKind::kNumber);
  EXPECT_EQ(record.field(2)->kind, FieldKind::kBoolean);
  EXPECT_EQ(record.field(2)->text, "true");
  EXPECT_EQ(record.field(3)->kind, FieldKind::kJson);
  EXPECT_EQ(record.field(3)->text, R"({"a":[1.50,"x\"y",null,{}],"b":{"c":false}})");
  EXPECT_EQ(record.field(4)->text, "[]");
  EXPECT_FALSE(record.field(5));  // null is absent
  ASSERT_EQ(record.undeclared.size(), 2u);  // the null one is left out
  EXPECT_EQ(record.undeclared[0].first, "note");
  EXPECT_EQ(record.undeclared[0].second.text, "n");
  EXPECT_EQ(record.undeclared[1].first, "deep");
  EXPECT_EQ(record.undeclared[1].second.text, R"({"k":[2]})");
  EXPECT_EQ(record.undeclared[1].second.kind, FieldKind::kJson);
}

}  // namespace
}  // namespace tidemark::connectors::file
