#pragma once
// The HTTP source's RecordDecoder: a quarantined record is one JSON object as the API sent it
// (an array element or an NDJSON line), decoded again by the exact-number JSON decoder.
#include "pipeline/core/record_decoder.hpp"

namespace tidemark::connectors::http_api {

class HttpRecordDecoder final : public pipeline::RecordDecoder {
 public:
  pipeline::DecodedRecord decode(std::string_view format, std::string_view decode_context, std::string_view raw,
                                 const std::string& origin, const pipeline::RecordLayout& layout) const override;
};

}  // namespace tidemark::connectors::http_api
