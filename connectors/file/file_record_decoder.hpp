#pragma once
// The file connector's RecordDecoder: decodes a quarantined CSV or JSON Lines record again,
// a CSV record against the header line stored as its decode_context.
#include "pipeline/core/record_decoder.hpp"

namespace tidemark::connectors::file {

class FileRecordDecoder final : public pipeline::RecordDecoder {
 public:
  pipeline::DecodedRecord decode(std::string_view format, std::string_view decode_context, std::string_view raw,
                                 const std::string& origin, const pipeline::RecordLayout& layout) const override;
};

}  // namespace tidemark::connectors::file
