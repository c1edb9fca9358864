#include "connectors/file/file_record_decoder.hpp"

#include <vector>

#include "connectors/file/format.hpp"
#include "connectors/file/record_stream.hpp"

namespace tidemark::connectors::file {

pipeline::DecodedRecord FileRecordDecoder::decode(std::string_view format, std::string_view decode_context,
                                                  std::string_view raw, const std::string& origin,
                                                  const pipeline::RecordLayout& layout) const {
  const auto invalid = [&](std::string reason) {
    pipeline::DecodedRecord single;
    single.raw = std::string(raw);
    single.position.file = origin;
    single.decode_error = std::move(reason);
    return single;
  };
  const std::optional<Format> parsed = parse_format(format);
  if (!parsed) return invalid("the file connector does not decode format '" + std::string(format) + "'");
  // Decode exactly as the source did: a CSV record comes after its file's header line.
  std::string text;
  if (*parsed == Format::kCsv) {
    text.reserve(decode_context.size() + 1 + raw.size());
    text.append(decode_context).append("\n");
  }
  text.append(raw);
  std::vector<pipeline::DecodedRecord> decoded = decode_text(*parsed, text, origin, std::make_shared<const pipeline::RecordLayout>(layout));
  if (decoded.size() != 1) {
    return invalid("quarantined record decodes to " + std::to_string(decoded.size()) + " records, expected 1");
  }
  return std::move(decoded.front());
}

}  // namespace tidemark::connectors::file
