#include "connectors/http_api/record_decoder.hpp"

#include "connectors/file/jsonl_decoder.hpp"
#include "connectors/http_api/http_source.hpp"

namespace tidemark::connectors::http_api {

pipeline::DecodedRecord HttpRecordDecoder::decode(std::string_view format, std::string_view, std::string_view raw,
                                                  const std::string& origin,
                                                  const pipeline::RecordLayout& layout) const {
  pipeline::SourcePosition position;
  position.file = origin;
  if (format != kRecordFormat) {
    pipeline::DecodedRecord invalid;
    invalid.raw = std::string(raw);
    invalid.position = std::move(position);
    invalid.decode_error = "the http source does not decode format '" + std::string(format) + "'";
    return invalid;
  }
  // The decoder of one JSON Lines line reads any one JSON object, newlines inside it too.
  return file::decode_jsonl_line(raw, std::move(position), layout);
}

}  // namespace tidemark::connectors::http_api
