// FileRecordDecoder: the file connector's side of the RecordDecoder port, which a quarantine
// release decodes a stored record through.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "connectors/file/file_record_decoder.hpp"
#include "connectors/file/record_layout.hpp"
#include "pipeline/core/validate.hpp"
#include "tests/support/built_in_record.hpp"

namespace tidemark::connectors::file {
namespace {

using ::testing::HasSubstr;

const FileRecordDecoder kDecoder;

TEST(FileRecordDecoder, DecodesACsvRecordAgainstTheHeaderLineStoredAsItsContext) {
  const auto record = kDecoder.decode("csv", "amount,transaction_id,source_revision", "1.50,tx-1,2", "quarantine-7", *built_in_layout());
  ASSERT_FALSE(record.decode_error) << *record.decode_error;
  EXPECT_EQ(record.field(pipeline::built_in_field::kTransactionId)->text, "tx-1");
  EXPECT_EQ(record.field(pipeline::built_in_field::kSourceRevision)->text, "2");
  EXPECT_EQ(record.field(pipeline::built_in_field::kAmount)->text, "1.50");
  EXPECT_EQ(record.raw, "1.50,tx-1,2");
  EXPECT_EQ(record.position.file, "quarantine-7");
  EXPECT_EQ(record.position.line, 2u);  // after the header line, as in its file
  ASSERT_NE(record.decode_context, nullptr);  // quarantined again, it keeps its header
  EXPECT_EQ(*record.decode_context, "amount,transaction_id,source_revision");
}

TEST(FileRecordDecoder, DecodesAJsonLineWithoutContext) {
  const auto record = kDecoder.decode("jsonl", "", R"({"transaction_id":"j","source_revision":1,"amount":"2.00"})",
                                      "quarantine-8", *built_in_layout());
  ASSERT_FALSE(record.decode_error) << *record.decode_error;
  EXPECT_EQ(record.field(pipeline::built_in_field::kTransactionId)->text, "j");
  EXPECT_EQ(record.decode_context, nullptr);
}

TEST(FileRecordDecoder, TextThatIsNotExactlyOneRecordIsAnInvalidRecordNotAnError) {
  const auto two = kDecoder.decode("jsonl", "", "{\"a\":1}\n{\"a\":2}", "quarantine-9", *built_in_layout());
  ASSERT_TRUE(two.decode_error);
  EXPECT_THAT(*two.decode_error, HasSubstr("decodes to 2 records, expected 1"));
  EXPECT_EQ(two.raw, "{\"a\":1}\n{\"a\":2}");
  EXPECT_EQ(two.position.file, "quarantine-9");
}

TEST(FileRecordDecoder, AFormatFilesAreNotReadInIsAnInvalidRecordNamingIt) {
  const auto record = kDecoder.decode("avro", "", "anything", "quarantine-10", *built_in_layout());
  ASSERT_TRUE(record.decode_error);
  EXPECT_THAT(*record.decode_error, HasSubstr("'avro'"));
  EXPECT_EQ(record.raw, "anything");
}

}  // namespace
}  // namespace tidemark::connectors::file
