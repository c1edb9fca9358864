#pragma once
// The port a quarantine release decodes a stored record through: the connector that read the
// record decodes its raw text again, exactly as its source did. The pipeline never knows the
// formats; app/ wires each connector's decoder.
#include <string>
#include <string_view>

#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

class RecordDecoder {
 public:
  virtual ~RecordDecoder() = default;
  // Decodes `raw` into the fields `layout` names, one record as received by a source of `format`, with the decode_context
  // its source gave it (DecodedRecord::decode_context; empty when it had none). The record's
  // position names `origin` (the quarantine entry). Text that is not exactly one record of
  // that format, or a format this decoder does not know, is an invalid record (decode_error
  // set), never an exception: the release quarantines it again with that reason.
  virtual DecodedRecord decode(std::string_view format, std::string_view decode_context, std::string_view raw,
                               const std::string& origin, const RecordLayout& layout) const = 0;
};

}  // namespace tidemark::pipeline
