// DecodedRecord: what a batch keeps of a record once its canonical form stands for it.
#include <gtest/gtest.h>

#include <utility>

#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {
namespace {

TEST(DecodedRecord, ReleaseFieldsFreesTheFieldBuffersAndKeepsTheRestOfTheRecord) {
  DecodedRecord record;
  record.raw = "k-1,1,12.5";
  record.position = SourcePosition{"in.csv", 2, 10, 21};
  record.fields.resize(14);
  record.field(kKeyField) = Field{"k-1", FieldKind::kUntyped};
  record.undeclared.emplace_back("note", Field{"a note longer than a short string", FieldKind::kUntyped});

  record.release_fields();

  // Capacity, not only size: a batch holds 10,000 records, and a 14-field layout's buffer is
  // 672 bytes each (assigning {} kept it).
  EXPECT_EQ(record.fields.capacity(), 0u);
  EXPECT_EQ(record.undeclared.capacity(), 0u);
  EXPECT_FALSE(std::as_const(record).field(kKeyField));
  EXPECT_EQ(record.raw, "k-1,1,12.5");
  EXPECT_EQ(record.position.describe(), "in.csv:2 (byte 10)");
}

}  // namespace
}  // namespace tidemark::pipeline
