// The JSON Lines decoder against the public JSONTestSuite (github.com/nst/JSONTestSuite,
// test_parsing/, MIT, copied into data/jsontestsuite/): every document that must be rejected
// (n_*) is reported as malformed JSON, never as a valid value of the wrong kind; every valid
// object (y_*) decodes, and every other valid value is "not a JSON object".
//
// Each document is one JSONL line. A final "\n" is that line's terminator, dropped as the
// record reader drops it; a document with a newline before its end would be several lines
// and is not a case for a line decoder (3 n_*, 2 y_*: counted below).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "connectors/file/jsonl_decoder.hpp"
#include "pipeline/core/utf8.hpp"

namespace tidemark::connectors::file {
namespace {

struct Document {
  std::string name;
  std::string line;
};

struct Suite {
  std::vector<Document> lines;
  std::size_t multi_line = 0;
};

// The suite's documents whose names start with `prefix` ("n_", "y_"), in name order.
Suite documents(std::string_view prefix) {
  const auto folder = std::filesystem::path(TIDEMARK_SOURCE_DIR) / "connectors/file/tests/data/jsontestsuite/test_parsing";
  Suite suite;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.find('\n') != std::string::npos) {
      ++suite.multi_line;
      continue;
    }
    suite.lines.push_back({std::move(name), std::move(text)});
  }
  std::sort(suite.lines.begin(), suite.lines.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return suite;
}

pipeline::DecodedRecord decode(const Document& document) {
  // Every member of an object is kept (as an undeclared one), so each is decoded and written
  // back, none skipped.
  pipeline::RecordLayout keep_all;
  keep_all.undeclared = true;
  return decode_jsonl_line(document.line, {document.name, 1, 0, document.line.size()}, keep_all);
}

bool starts_with(std::string_view text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }

TEST(JsonlJsonTestSuite, EveryMalformedDocumentIsReportedMalformedNeverAsTheWrongKindOfValue) {
  const Suite suite = documents("n_");
  EXPECT_EQ(suite.multi_line, 3u);
  ASSERT_EQ(suite.lines.size(), 185u);  // of the suite's 188
  const std::string too_deep = "jsonl: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  std::size_t malformed = 0;
  std::vector<std::string> deep;
  std::vector<std::string> bom;
  for (const Document& document : suite.lines) {
    const auto record = decode(document);
    ASSERT_TRUE(record.decode_error) << document.name << " decoded";
    const std::string& error = *record.decode_error;
    if (starts_with(error, "jsonl: malformed JSON at column ")) {
      ++malformed;
    } else if (error == too_deep) {
      deep.push_back(document.name);  // its fault lies beyond the depth the decoder reads to
    } else if (error == "jsonl: " + std::string(pipeline::kMisplacedBom)) {
      bom.push_back(document.name);  // a line's BOM is named as such: a file's own is skipped before
    } else {
      ADD_FAILURE() << document.name << ": " << error;
    }
    EXPECT_TRUE(record.fields.empty() && record.undeclared.empty()) << document.name;
    EXPECT_EQ(record.raw, document.line) << document.name;
  }
  EXPECT_EQ(malformed, 182u);
  EXPECT_EQ(bom, std::vector<std::string>{"n_structure_UTF8_BOM_no_data.json"});
  EXPECT_EQ(deep, (std::vector<std::string>{"n_structure_100000_opening_arrays.json",
                                            "n_structure_open_array_object.json"}));
}

TEST(JsonlJsonTestSuite, EveryValidObjectDecodesAndEveryOtherValidValueIsNotAJsonObject) {
  const Suite suite = documents("y_");
  EXPECT_EQ(suite.multi_line, 2u);
  ASSERT_EQ(suite.lines.size(), 93u);  // of the suite's 95
  std::size_t objects = 0;
  std::size_t others = 0;
  for (const Document& document : suite.lines) {
    const auto record = decode(document);
    // A valid document's first byte that is not JSON whitespace says what it is.
    const auto first = document.line.find_first_not_of(" \t\r\n");
    ASSERT_NE(first, std::string::npos) << document.name;
    if (document.line[first] == '{') {
      ++objects;
      EXPECT_FALSE(record.decode_error) << document.name << ": " << record.decode_error.value_or("");
    } else {
      ++others;
      EXPECT_TRUE(starts_with(record.decode_error.value_or(""), "jsonl: line is not a JSON object (found: "))
          << document.name << ": " << record.decode_error.value_or("decoded");
    }
  }
  EXPECT_EQ(objects, 11u);
  EXPECT_EQ(others, 82u);
}

}  // namespace
}  // namespace tidemark::connectors::file
