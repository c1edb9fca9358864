#include "connectors/file/jsonl_decoder.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/core/json_value.hpp"
#include "pipeline/core/utf8.hpp"

namespace tidemark::connectors::file {

namespace {

using boost::json::error_code;
using boost::json::string_view;

// Fills a DecodedRecord from the SAX events of one line. Depth 1 is the line's object; only
// its direct members can be fields. An object or array member is written back as JSON text
// (strings re-escaped, numbers as their source text) when it is one the record keeps, and
// skipped without copying otherwise. A line that is valid JSON but no record (not an object,
// a field named twice) sets error() and ignores the rest of its events without stopping the
// parser: only a line that parses to its end gets that reason, and one that does not is
// reported as malformed JSON, its real fault (`[1 true]` is malformed, not an array).
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

  // Set when the line is not what a record may be; the reason holds if the line parses.
  const std::optional<std::string>& error() const { return error_; }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }

  bool on_object_begin(error_code&) { return open('{', "object"); }
  bool on_object_end(std::size_t, error_code&) { return close('}'); }
  bool on_array_begin(error_code&) { return open('[', "array"); }
  bool on_array_end(std::size_t, error_code&) { return close(']'); }

  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (!error_ && (depth_ == 1 || capturing())) key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code&) {
    if (error_) return true;
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
      if (seen_[*index]) return fail("field \"" + key_ + "\" appears more than once");
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

  bool on_string_part(string_view s, std::size_t, error_code&) {
    if (error_) return true;
    if (depth_ == 0) return not_an_object("string");
    if (capturing() || (depth_ == 1 && target_ != Target::kNone)) part_.append(s.data(), s.size());
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code&) {
    if (error_) return true;
    if (depth_ == 0) return not_an_object("string");
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

  bool on_number_part(string_view s, error_code&) {
    if (error_) return true;
    if (depth_ == 0) return not_an_object("number");
    if (capturing() || (depth_ == 1 && target_ != Target::kNone)) part_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t, string_view s, error_code&) { return number(s); }
  bool on_uint64(std::uint64_t, string_view s, error_code&) { return number(s); }
  bool on_double(double, string_view s, error_code&) { return number(s); }

  bool on_bool(bool b, error_code&) { return scalar(b ? "true" : "false", pipeline::FieldKind::kBoolean); }
  bool on_null(error_code&) {
    if (error_) return true;
    if (depth_ == 0) return not_an_object("null");
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

  // Returns true: the parser goes on, so that a syntax error later in the line still wins.
  bool fail(std::string message) {
    error_ = std::move(message);
    return true;
  }
  bool not_an_object(std::string_view found) {
    return fail("line is not a JSON object (found: " + std::string(found) + ")");
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
  bool open(char bracket, std::string_view description) {
    if (error_) return true;
    if (depth_ == 0 && bracket == '[') return not_an_object(description);
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
    if (error_) return true;
    --depth_;
    if (capturing()) {
      text_ += bracket;
      containers_.pop_back();
      if (!capturing()) assign(pipeline::FieldKind::kJson);
    }
    return true;
  }
  bool scalar(std::string_view text, pipeline::FieldKind kind) {
    if (error_) return true;
    if (depth_ == 0) return not_an_object(text);
    if (capturing()) {
      separate();
      text_ += text;
    } else if (depth_ == 1 && target_ != Target::kNone) {
      text_ = text;
      assign(kind);
    }
    return true;
  }
  bool number(string_view s) {
    if (error_) return true;
    if (depth_ == 0) return not_an_object("number");
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

// What stands at a byte offset of the line, for a message that points at a fault.
std::string byte_at(std::string_view line, std::size_t offset) {
  const auto byte = static_cast<unsigned char>(line[offset]);
  if (byte >= 0x20 && byte < 0x7F) return std::string{'\'', static_cast<char>(byte), '\''};
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 0xF];
}

std::string malformed(std::size_t offset, std::string_view what) {
  return "jsonl: malformed JSON at column " + std::to_string(offset + 1) + ": " + std::string(what);
}

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

  // Syntax first: a line that is not JSON is malformed, whatever its first bytes looked like.
  // `parsed` is where the parser stopped, the faulty byte's offset.
  std::optional<std::string> error;
  if (ec && parsed == 0 && line.starts_with(pipeline::kUtf8Bom)) {
    // The file's own BOM is skipped before its first line (RecordStream); one here was pasted in.
    error = "jsonl: " + std::string(pipeline::kMisplacedBom);
  } else if (ec == boost::json::error::too_deep) {
    error = "jsonl: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  } else if (ec) {
    error = malformed(parsed, parsed < line.size() ? ec.message() + " at " + byte_at(line, parsed) : ec.message());
  } else if (parsed != line.size()) {
    error = malformed(parsed, "unexpected " + byte_at(line, parsed) + " after the JSON value");
  } else if (parser.handler().error()) {
    error = "jsonl: " + *parser.handler().error();
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
