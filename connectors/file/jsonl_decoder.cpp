#include "connectors/file/jsonl_decoder.hpp"

#include <array>
#include <boost/json/basic_parser_impl.hpp>
#include <optional>
#include <string>
#include <utility>

#include "connectors/file/record_fields.hpp"

namespace tidemark::connectors::file {

namespace {

using boost::json::error_code;
using boost::json::string_view;

// Fills a DecodedRecord from the SAX events of one line. Depth 1 is the line's object; only
// its direct members can be contract fields, anything deeper is skipped without copying.
class LineHandler {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  explicit LineHandler(pipeline::DecodedRecord& record) : record_(record) {}

  // Set when the line is valid JSON but not what a record may be.
  const std::optional<std::string>& error() const { return error_; }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }

  bool on_object_begin(error_code& ec) {
    if (depth_ > 0 && !value("object", ec)) return false;
    ++depth_;
    return true;
  }
  bool on_object_end(std::size_t, error_code&) {
    --depth_;
    return true;
  }
  bool on_array_begin(error_code& ec) {
    if (!value("array", ec)) return false;
    ++depth_;
    return true;
  }
  bool on_array_end(std::size_t, error_code&) {
    --depth_;
    return true;
  }

  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (depth_ == 1) key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code& ec) {
    if (depth_ != 1) return true;
    key_.append(s.data(), s.size());
    current_ = record_field_index(key_);
    if (current_) {
      if (seen_[*current_]) return fail("field \"" + key_ + "\" appears more than once", ec);
      seen_[*current_] = true;
    }
    key_.clear();
    return true;
  }

  bool on_string_part(string_view s, std::size_t, error_code& ec) {
    if (depth_ == 0) return not_an_object("string", ec);
    if (depth_ == 1 && current_) text_.append(s.data(), s.size());
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code& ec) {
    if (depth_ == 0) return not_an_object("string", ec);
    if (depth_ == 1 && current_) {
      text_.append(s.data(), s.size());
      assign(pipeline::FieldKind::kString);
    }
    return true;
  }

  bool on_number_part(string_view s, error_code& ec) {
    if (depth_ == 0) return not_an_object("number", ec);
    if (depth_ == 1 && current_) text_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t, string_view s, error_code& ec) { return number(s, ec); }
  bool on_uint64(std::uint64_t, string_view s, error_code& ec) { return number(s, ec); }
  bool on_double(double, string_view s, error_code& ec) { return number(s, ec); }

  bool on_bool(bool b, error_code& ec) { return value(b ? "true" : "false", ec); }
  bool on_null(error_code& ec) {
    if (depth_ == 0) return not_an_object("null", ec);
    current_.reset();  // JSON null is an absent field
    return true;
  }

  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

 private:
  bool fail(std::string message, error_code& ec) {
    error_ = std::move(message);
    // The parser needs some error code to stop; error_ carries the real reason.
    ec = boost::json::error::syntax;
    return false;
  }
  bool not_an_object(std::string_view found, error_code& ec) {
    return fail("line is not a JSON object (found: " + std::string(found) + ")", ec);
  }
  // A bool, object or array: a contract field holding one gets a kOther description.
  bool value(std::string_view description, error_code& ec) {
    if (depth_ == 0) return not_an_object(description, ec);
    if (depth_ == 1 && current_) {
      text_ = description;
      assign(pipeline::FieldKind::kOther);
    }
    return true;
  }
  bool number(string_view s, error_code& ec) {
    if (depth_ == 0) return not_an_object("number", ec);
    if (depth_ == 1 && current_) {
      text_.append(s.data(), s.size());
      assign(pipeline::FieldKind::kNumber);
    }
    return true;
  }
  void assign(pipeline::FieldKind kind) {
    record_.*kRecordFields[*current_].member = pipeline::Field{std::move(text_), kind};
    text_.clear();
    current_.reset();
  }

  pipeline::DecodedRecord& record_;
  std::size_t depth_ = 0;
  std::string key_;
  std::string text_;
  std::optional<std::size_t> current_;  // the contract field the next depth-1 value belongs to
  std::array<bool, kRecordFields.size()> seen_{};
  std::optional<std::string> error_;
};

}  // namespace

pipeline::DecodedRecord decode_jsonl_line(std::string_view line, pipeline::SourcePosition position) {
  pipeline::DecodedRecord record;
  record.raw = std::string(line);
  record.position = std::move(position);
  boost::json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  boost::json::basic_parser<LineHandler> parser(options, record);
  error_code ec;
  const std::size_t parsed = parser.write_some(false, line.data(), line.size(), ec);

  std::optional<std::string> error;
  if (parser.handler().error()) {
    error = "jsonl: " + *parser.handler().error();
  } else if (ec == boost::json::error::too_deep) {
    error = "jsonl: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  } else if (ec) {
    error = "jsonl: malformed JSON at column " + std::to_string(parsed + 1) + ": " + ec.message();
  } else if (parsed != line.size()) {
    error = "jsonl: unexpected text after the JSON object at column " + std::to_string(parsed + 1);
  }
  if (error) {
    // A record that could not be decoded carries no fields, only its text and the reason.
    pipeline::DecodedRecord failed;
    failed.raw = std::move(record.raw);
    failed.position = std::move(record.position);
    failed.decode_error = std::move(error);
    record = std::move(failed);
  }
  return record;
}

}  // namespace tidemark::connectors::file
