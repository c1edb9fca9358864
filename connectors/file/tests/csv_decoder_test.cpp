// RFC 4180 decoding: quoting, line endings, BOM, empty fields and every kind of bad record.
#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "pipeline/core/validate.hpp"
#include "tests/support/built_in_record.hpp"
#include "connectors/file/csv_decoder.hpp"
#include "connectors/file/record_stream.hpp"

namespace tidemark::connectors::file {
namespace {

using pipeline::DecodedRecord;
using pipeline::FieldKind;

constexpr std::string_view kHeader = "transaction_id,source_revision,amount,account_id,occurred_at\n";

std::vector<DecodedRecord> decode(std::string_view text) { return decode_text(Format::kCsv, text, "in.csv"); }

std::string text_of(const std::optional<pipeline::Field>& field) {
  EXPECT_TRUE(field.has_value());
  return field ? field->text : "";
}

TEST(CsvDecoder, DecodesPlainRecordsAsUntypedText) {
  const auto records = decode(std::string(kHeader) + "t1,1,10.50,acc,2024-05-01T10:00:00Z\nt2,2,-3,acc2,\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[0].decode_error);
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kTransactionId)), "t1");
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kSourceRevision)), "1");
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kAmount)), "10.50");
  EXPECT_EQ(records[0].field(pipeline::built_in_field::kAmount)->kind, FieldKind::kUntyped);
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kAccountId)), "acc");
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kOccurredAt)), "2024-05-01T10:00:00Z");
  EXPECT_EQ(records[0].raw, "t1,1,10.50,acc,2024-05-01T10:00:00Z");
  EXPECT_EQ(text_of(records[1].field(pipeline::built_in_field::kTransactionId)), "t2");
}

TEST(CsvDecoder, MapsColumnsByHeaderNameInAnyOrderAndIgnoresOthers) {
  const auto records = decode("note,amount,transaction_id,extra,source_revision\nhi,5,t1,x,3\n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].decode_error);
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kTransactionId)), "t1");
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kSourceRevision)), "3");
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kAmount)), "5");
  EXPECT_FALSE(records[0].field(pipeline::built_in_field::kAccountId));  // no column: absent for every record
  EXPECT_FALSE(records[0].field(pipeline::built_in_field::kOccurredAt));
}

TEST(CsvDecoder, HeaderNamesMatchExactlyWithoutTrimming) {
  const auto records = decode(" transaction_id,source_revision,amount\nt1,1,2\n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].field(pipeline::built_in_field::kTransactionId));
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kAmount)), "2");
}

TEST(CsvDecoder, QuotedFieldsWithEscapedQuotesEmbeddedCommaAndNewlines) {
  const auto records = decode(std::string(kHeader) +
                              "\"t,1\",\"1\",\"1.00\",\"say \"\"hi\"\"\",\"a\nb\"\n"
                              "\"x\r\ny\",2,3,\"cr\ronly\",\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[0].decode_error);
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kTransactionId)), "t,1");
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kSourceRevision)), "1");
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kAccountId)), "say \"hi\"");
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kOccurredAt)), "a\nb");
  EXPECT_EQ(records[0].raw, "\"t,1\",\"1\",\"1.00\",\"say \"\"hi\"\"\",\"a\nb\"");
  EXPECT_EQ(records[0].position.line, 2u);
  EXPECT_FALSE(records[1].decode_error);
  EXPECT_EQ(text_of(records[1].field(pipeline::built_in_field::kTransactionId)), "x\r\ny");
  EXPECT_EQ(text_of(records[1].field(pipeline::built_in_field::kAccountId)), "cr\ronly");
  EXPECT_EQ(records[1].position.line, 4u);  // the quoted LF moved it down a line
}

TEST(CsvDecoder, CrlfAndLfFilesDecodeTheSame) {
  const std::string lf = std::string(kHeader) + "t1,1,1,a,\n\"t2\",2,2,\"b\",\n";
  std::string crlf;
  for (char c : lf) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  const auto from_lf = decode(lf);
  const auto from_crlf = decode(crlf);
  ASSERT_EQ(from_lf.size(), 2u);
  ASSERT_EQ(from_crlf.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_FALSE(from_crlf[i].decode_error) << *from_crlf[i].decode_error;
    EXPECT_EQ(from_crlf[i].raw, from_lf[i].raw);
    EXPECT_EQ(text_of(from_crlf[i].field(pipeline::built_in_field::kTransactionId)), text_of(from_lf[i].field(pipeline::built_in_field::kTransactionId)));
    EXPECT_EQ(text_of(from_crlf[i].field(pipeline::built_in_field::kAccountId)), text_of(from_lf[i].field(pipeline::built_in_field::kAccountId)));
    EXPECT_EQ(from_crlf[i].position.line, from_lf[i].position.line);
  }
  EXPECT_EQ(from_crlf[1].position.end_offset, crlf.size());
}

TEST(CsvDecoder, SkipsUtf8BomButCountsItsBytes) {
  const std::string text = "\xEF\xBB\xBF" + std::string(kHeader) + "t1,1,1,,\n";
  const auto records = decode(text);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].decode_error);
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kTransactionId)), "t1");
  EXPECT_EQ(records[0].position.offset, 3 + kHeader.size());
  EXPECT_EQ(records[0].position.line, 2u);
}

// A BOM anywhere but at the start of the file (a second file pasted onto
// the first) is not skipped and not part of the record's first field: the record is
// quarantined saying why. Inside quotes it reaches the validator, which refuses it there.
TEST(CsvDecoder, ABomPastTheStartOfTheFileMakesItsRecordADecodeError) {
  const std::string text = "\xEF\xBB\xBF" + std::string(kHeader) + "t1,1,1,,\n\xEF\xBB\xBFn5,1,1,,\n"
                           "\"\xEF\xBB\xBFn6\",1,1,,\nt7,1,1,,\n";
  const auto records = decode(text);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_FALSE(records[0].decode_error);
  EXPECT_EQ(records[1].decode_error,
            "csv: starts with a byte order mark (U+FEFF), accepted only at the start of a file");
  EXPECT_EQ(records[1].raw, "\xEF\xBB\xBFn5,1,1,,");
  EXPECT_EQ(records[1].position.line, 3u);
  const auto quoted = pipeline::validate(records[2]);
  ASSERT_TRUE(std::holds_alternative<pipeline::Rejection>(quoted));
  EXPECT_EQ(std::get<pipeline::Rejection>(quoted).detail,
            "transaction_id: starts with a byte order mark (U+FEFF), accepted only at the start of a file in "
            "\"\\xEF\\xBB\\xBFn6\"");
  EXPECT_FALSE(records[3].decode_error);
  EXPECT_EQ(text_of(records[3].field(pipeline::built_in_field::kTransactionId)), "t7");
}

TEST(CsvDecoder, LastRecordWithoutTrailingNewline) {
  const std::string text = std::string(kHeader) + "t1,1,1,,\nt2,2,2,,";
  const auto records = decode(text);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[1].decode_error);
  EXPECT_EQ(text_of(records[1].field(pipeline::built_in_field::kTransactionId)), "t2");
  EXPECT_EQ(records[1].raw, "t2,2,2,,");
  EXPECT_EQ(records[1].position.end_offset, text.size());
}

TEST(CsvDecoder, EmptyOptionalFieldsAreAbsentAndEmptyRequiredFieldsAreEmptyText) {
  const auto records = decode(std::string(kHeader) + ",,,,\n\"\",\"\",\"\",\"\",\"\"\n");
  ASSERT_EQ(records.size(), 2u);
  for (const auto& record : records) {
    EXPECT_FALSE(record.decode_error);
    EXPECT_EQ(text_of(record.field(pipeline::built_in_field::kTransactionId)), "");
    EXPECT_EQ(text_of(record.field(pipeline::built_in_field::kSourceRevision)), "");
    EXPECT_EQ(text_of(record.field(pipeline::built_in_field::kAmount)), "");
    EXPECT_FALSE(record.field(pipeline::built_in_field::kAccountId));
    EXPECT_FALSE(record.field(pipeline::built_in_field::kOccurredAt));
  }
}

TEST(CsvDecoder, SkipsCompletelyEmptyLines) {
  const auto records = decode("\n" + std::string(kHeader) + "\n\r\nt1,1,1,,\n\n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(text_of(records[0].field(pipeline::built_in_field::kTransactionId)), "t1");
  EXPECT_EQ(records[0].position.line, 5u);
}

TEST(CsvDecoder, UnterminatedQuoteAtEndOfFileIsADecodeError) {
  const auto records = decode(std::string(kHeader) + "t1,1,1,,\nt2,2,\"3,,\nt3,3,3,,\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[0].decode_error);
  ASSERT_TRUE(records[1].decode_error);
  EXPECT_EQ(*records[1].decode_error, "csv: unterminated quoted field 3");
  EXPECT_EQ(records[1].raw, "t2,2,\"3,,\nt3,3,3,,\n");  // the open quote runs to the end
  EXPECT_EQ(records[1].position.line, 3u);
  EXPECT_FALSE(records[1].field(pipeline::built_in_field::kTransactionId));
}

TEST(CsvDecoder, QuoteInsideUnquotedFieldIsADecodeErrorAndReadingContinues) {
  const auto records = decode(std::string(kHeader) + "t1,1,ab\"c,,\nt2,2,2,,\n");
  ASSERT_EQ(records.size(), 2u);
  ASSERT_TRUE(records[0].decode_error);
  EXPECT_EQ(*records[0].decode_error, "csv: quote inside unquoted field 3");
  EXPECT_EQ(records[0].raw, "t1,1,ab\"c,,");
  EXPECT_FALSE(records[1].decode_error);
  EXPECT_EQ(text_of(records[1].field(pipeline::built_in_field::kTransactionId)), "t2");
}

TEST(CsvDecoder, TextAfterClosingQuoteIsADecodeError) {
  const auto records = decode(std::string(kHeader) + "\"t1\"x,1,1,,\n");
  ASSERT_EQ(records.size(), 1u);
  ASSERT_TRUE(records[0].decode_error);
  EXPECT_EQ(*records[0].decode_error, "csv: unexpected character after closing quote in field 1");
}

TEST(CsvDecoder, WrongColumnCountIsADecodeError) {
  const auto records = decode(std::string(kHeader) + "t1,1,1,\nt2,2,2,,,\nt3,3,3,,\n");
  ASSERT_EQ(records.size(), 3u);
  ASSERT_TRUE(records[0].decode_error);
  EXPECT_EQ(*records[0].decode_error, "csv: 4 fields, header has 5");
  ASSERT_TRUE(records[1].decode_error);
  EXPECT_EQ(*records[1].decode_error, "csv: 6 fields, header has 5");
  EXPECT_FALSE(records[2].decode_error);
}

TEST(CsvDecoder, DuplicatedContractColumnMakesEveryRecordAnError) {
  const auto records = decode("transaction_id,amount,amount,source_revision\nt1,1,2,3\n");
  ASSERT_EQ(records.size(), 1u);
  ASSERT_TRUE(records[0].decode_error);
  EXPECT_EQ(*records[0].decode_error, "csv: unusable header row: column \"amount\" appears more than once");
}

TEST(CsvDecoder, FileWithOnlyAHeaderOrNothingHasNoRecords) {
  EXPECT_TRUE(decode(kHeader).empty());
  EXPECT_TRUE(decode("").empty());
  EXPECT_TRUE(decode("\xEF\xBB\xBF").empty());
}

TEST(CsvDecoder, PositionsGiveLineOffsetAndEnd) {
  const std::string text = std::string(kHeader) + "t1,1,1,,\r\nt2,2,2,,\n";
  const auto records = decode(text);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].position.file, "in.csv");
  EXPECT_EQ(records[0].position.line, 2u);
  EXPECT_EQ(records[0].position.offset, kHeader.size());
  EXPECT_EQ(records[0].position.end_offset, kHeader.size() + 10);
  EXPECT_EQ(records[1].position.line, 3u);
  EXPECT_EQ(records[1].position.offset, kHeader.size() + 10);
  EXPECT_EQ(records[1].position.end_offset, text.size());
}

TEST(CsvScan, NeedsMoreInputUntilTheRecordEnds) {
  EXPECT_FALSE(scan_csv_record("a,\"b\nc", false).complete);
  EXPECT_FALSE(scan_csv_record("a,b", false).complete);
  const CsvScan scan = scan_csv_record("a,\"b\nc\"\r\nnext", false);
  ASSERT_TRUE(scan.complete);
  EXPECT_EQ(scan.content_size, 7u);
  EXPECT_EQ(scan.frame_size, 9u);
}

// Any split of the input into chunks must give the same records as one whole text.
TEST(RecordStream, CsvChunkBoundariesDoNotChangeRecords) {
  const std::string text = "\xEF\xBB\xBF" + std::string(kHeader) +
                           "\"a\r\nb\",1,2,,\r\n\r\nt,2,\"x\"\"y\",z,\nbad\"q,1,1,,\nt3,3,3,,";
  const auto whole = decode(text);
  for (std::size_t chunk = 1; chunk <= 7; ++chunk) {
    RecordStream stream(Format::kCsv);
    stream.start_file("in.csv");
    std::vector<DecodedRecord> got;
    for (std::size_t at = 0; at < text.size(); at += chunk) {
      stream.append(std::string_view(text).substr(at, chunk));
      while (auto record = stream.next(false)) got.push_back(std::move(*record));
    }
    while (auto record = stream.next(true)) got.push_back(std::move(*record));
    ASSERT_EQ(got.size(), whole.size()) << "chunk " << chunk;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].raw, whole[i].raw);
      EXPECT_EQ(got[i].decode_error, whole[i].decode_error);
      EXPECT_EQ(got[i].position.line, whole[i].position.line);
      EXPECT_EQ(got[i].position.offset, whole[i].position.offset);
      EXPECT_EQ(got[i].position.end_offset, whole[i].position.end_offset);
    }
  }
}

TEST(RecordStream, OverlongRecordBecomesAnErrorAndReadingResumesAtTheNextLine) {
  RecordStream stream(Format::kCsv, built_in_layout(), 64);
  stream.start_file("in.csv");
  const std::string text = std::string(kHeader) + "t1,\"" + std::string(100, 'x') + "\nt2,2,2,,\n";
  std::vector<DecodedRecord> got;
  for (std::size_t at = 0; at < text.size(); at += 8) {
    stream.append(std::string_view(text).substr(at, 8));
    while (auto record = stream.next(false)) got.push_back(std::move(*record));
  }
  while (auto record = stream.next(true)) got.push_back(std::move(*record));
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(got[0].decode_error);
  EXPECT_EQ(*got[0].decode_error, "record longer than 64 bytes");
  EXPECT_EQ(got[0].position.line, 2u);
  EXPECT_EQ(got[0].position.offset, kHeader.size());
  EXPECT_EQ(got[0].position.end_offset, kHeader.size() + 105);
  EXPECT_FALSE(got[1].decode_error);
  EXPECT_EQ(text_of(got[1].field(pipeline::built_in_field::kTransactionId)), "t2");
  EXPECT_EQ(got[1].position.line, 3u);
}

TEST(CsvDecoder, ADeclaredLayoutMapsItsColumnsAndKeepsOtherColumnsWhenAsked) {
  auto layout = std::make_shared<pipeline::RecordLayout>();
  layout->names = {"order_id", "version", "amount", "note"};
  layout->required = {true, true, true, false};
  layout->undeclared = true;
  const auto records = decode_text(Format::kCsv, "channel,version,note,order_id,amount,x\nweb,2,,o1,,\n", "o.csv", layout);
  ASSERT_EQ(records.size(), 1u);
  ASSERT_FALSE(records[0].decode_error) << *records[0].decode_error;
  EXPECT_EQ(records[0].field(0)->text, "o1");
  EXPECT_EQ(records[0].field(0)->kind, FieldKind::kUntyped);
  EXPECT_EQ(records[0].field(1)->text, "2");
  EXPECT_EQ(records[0].field(2)->text, "");  // required: kept, the validator says it is missing
  EXPECT_FALSE(records[0].field(3));         // optional and empty: absent
  ASSERT_EQ(records[0].undeclared.size(), 1u);  // x is empty: left out
  EXPECT_EQ(records[0].undeclared[0].first, "channel");
  EXPECT_EQ(records[0].undeclared[0].second.text, "web");

  CsvDecoder missing(layout);
  missing.read_header("order_id,note");
  EXPECT_EQ(missing.header_problem(), "the header row lacks required column(s) version, amount");
}

}  // namespace
}  // namespace tidemark::connectors::file
