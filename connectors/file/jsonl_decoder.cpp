#include "connectors/file/jsonl_decoder.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/core/json_value.hpp"

namespace tidemark::connectors::file {

namespace {

using boost::json::error_code;
using boost::json::string_view;

// Fills a DecodedRecord from the SAX events of one line. Depth 1 is the line's object; only
// its direct members can be fields. An object or array member is written back as JSON text
// (strings re-escaped, numbers as their source text) when it is one the record keeps, and
// skipped without copying otherwise.
class LineHandler {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  LineHandler(pipeline::DecodedRecord& record, const pipeline::RecordLayout& layout)
      : record_(record), layout_(layout), seen_(layout.names.size(), false) {
    record_.fields.resize(layout.names.size());
  }

  // Set when the line is valid JSON but not what a record may be.
  const std::optional<std::string>& error() const { return error_; }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }

  bool on_object_begin(error_code& ec) { return open('{', "object", ec); }
  bool on_object_end(std::size_t, error_code&) { return close('}'); }
  bool on_array_begin(error_code& ec) { return open('[', "array", ec); }
  bool on_array_end(std::size_t, error_code&) { return close(']'); }

  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (depth_ == 1 || capturing()) key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code& ec) {
    if (capturing()) {
      key_.append(s.data(), s.size());
      separate();
      text_ += pipeline::json_quoted(key_);
      text_ += ':';
      key_.clear();
      return true;
    }
    if (depth_ != 1) return true;
    key_.append(s.data(), s.size());
    target_ = Target::kNone;
    if (const auto index = layout_.index(key_)) {
      if (seen_[*index]) return fail("field \"" + key_ + "\" appears more than once", ec);
      seen_[*index] = true;
      target_ = Target::kDeclared;
      current_ = *index;
    } else if (layout_.undeclared) {
      target_ = Target::kUndeclared;
      undeclared_name_ = key_;
    }
    key_.clear();
    return true;
  }

  bool on_string_part(string_view s, std::size_t, error_code& ec) {
    if (depth_ == 0) return not_an_object("string", ec);
    if (capturing() || (depth_ == 1 && target_ != Target::kNone)) part_.append(s.data(), s.size());
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code& ec) {
    if (depth_ == 0) return not_an_object("string", ec);
    part_.append(s.data(), s.size());
    if (capturing()) {
      separate();
      text_ += pipeline::json_quoted(part_);
    } else if (depth_ == 1 && target_ != Target::kNone) {
      text_ = std::move(part_);
      assign(pipeline::FieldKind::kString);
    }
    part_.clear();
    return true;
  }

  bool on_number_part(string_view s, error_code& ec) {
    if (depth_ == 0) return not_an_object("number", ec);
    if (capturing() || (depth_ == 1 && target_ != Target::kNone)) part_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t, string_view s, error_code& ec) { return number(s, ec); }
  bool on_uint64(std::uint64_t, string_view s, error_code& ec) { return number(s, ec); }
  bool on_double(double, string_view s, error_code& ec) { return number(s, ec); }

  bool on_bool(bool b, error_code& ec) { return scalar(b ? "true" : "false", pipeline::FieldKind::kBoolean, ec); }
  bool on_null(error_code& ec) {
    if (depth_ == 0) return not_an_object("null", ec);
    if (capturing()) {
      separate();
      text_ += "null";
    } else if (depth_ == 1) {
      target_ = Target::kNone;  // JSON null is an absent field
    }
    return true;
  }

  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

 private:
  enum class Target { kNone, kDeclared, kUndeclared };

  bool capturing() const { return !containers_.empty(); }

  bool fail(std::string message, error_code& ec) {
    error_ = std::move(message);
    // The parser needs some error code to stop; error_ carries the real reason.
    ec = boost::json::error::syntax;
    return false;
  }
  bool not_an_object(std::string_view found, error_code& ec) {
    return fail("line is not a JSON object (found: " + std::string(found) + ")", ec);
  }
  // Inside a written-back container: the comma before a value of an array or a key of an
  // object (a value after its key needs none).
  void separate() {
    Container& container = containers_.back();
    if (container.expects_key_or_array_value()) {
      if (!container.first) text_ += ',';
      container.first = false;
    }
    container.after_key = !container.after_key && !container.array;
  }
  bool open(char bracket, std::string_view description, error_code& ec) {
    if (depth_ == 0 && bracket == '[') return not_an_object(description, ec);
    if (capturing()) {
      separate();
      text_ += bracket;
      containers_.push_back(Container{bracket == '['});
    } else if (depth_ == 1 && target_ != Target::kNone) {
      text_.assign(1, bracket);
      containers_.push_back(Container{bracket == '['});
    }
    ++depth_;
    return true;
  }
  bool close(char bracket) {
    --depth_;
    if (capturing()) {
      text_ += bracket;
      containers_.pop_back();
      if (!capturing()) assign(pipeline::FieldKind::kJson);
    }
    return true;
  }
  bool scalar(std::string_view text, pipeline::FieldKind kind, error_code& ec) {
    if (depth_ == 0) return not_an_object(text, ec);
    if (capturing()) {
      separate();
      text_ += text;
    } else if (depth_ == 1 && target_ != Target::kNone) {
      text_ = text;
      assign(kind);
    }
    return true;
  }
  bool number(string_view s, error_code& ec) {
    if (depth_ == 0) return not_an_object("number", ec);
    part_.append(s.data(), s.size());
    if (capturing()) {
      separate();
      text_ += part_;
    } else if (depth_ == 1 && target_ != Target::kNone) {
      text_ = std::move(part_);
      assign(pipeline::FieldKind::kNumber);
    }
    part_.clear();
    return true;
  }
  void assign(pipeline::FieldKind kind) {
    if (target_ == Target::kDeclared) {
      record_.fields[current_] = pipeline::Field{std::move(text_), kind};
    } else {
      record_.undeclared.emplace_back(std::move(undeclared_name_), pipeline::Field{std::move(text_), kind});
    }
    text_.clear();
    target_ = Target::kNone;
  }

  // An object or array being written back, and where in it the next event falls.
  struct Container {
    bool array = false;
    bool first = true;
    bool after_key = false;  // objects: a key was written, its value comes next
    bool expects_key_or_array_value() const { return array || !after_key; }
  };

  pipeline::DecodedRecord& record_;
  const pipeline::RecordLayout& layout_;
  std::size_t depth_ = 0;
  std::string key_;
  std::string part_;  // a string's or number's parts so far
  std::string text_;  // the value being delivered
  Target target_ = Target::kNone;  // what the next depth-1 value is
  std::size_t current_ = 0;        // kDeclared: its layout index
  std::string undeclared_name_;    // kUndeclared: its name
  std::vector<bool> seen_;
  std::vector<Container> containers_;
  std::optional<std::string> error_;
};

}  // namespace

pipeline::DecodedRecord decode_jsonl_line(std::string_view line, pipeline::SourcePosition position,
                                          const pipeline::RecordLayout& layout) {
  pipeline::DecodedRecord record;
  record.raw = std::string(line);
  record.position = std::move(position);
  boost::json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  boost::json::basic_parser<LineHandler> parser(options, record, layout);
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
