#include "app/wiring/run_request.hpp"

#include "connectors/file/file_record_decoder.hpp"
#include "connectors/file/file_source.hpp"
#include "connectors/file/format.hpp"

namespace tidemark::app {

pipeline::RunRequest request_from_config(const pipeline::PipelineConfig& config) {
  pipeline::RunRequest request;
  request.pipeline = config.name;
  request.batch_size = config.batch_size;
  request.max_batch_bytes = config.max_batch_bytes;
  request.max_rejected = config.max_rejected;
  request.destinations = config.destination_names();
  const connectors::file::Format format = connectors::file::parse_format(config.source.format).value();
  request.open_source = [path = config.source.path, format, settle = config.source.settle] {
    return connectors::file::open_file_source(path, format, settle);
  };
  return request;
}

const pipeline::RecordDecoder& quarantine_decoder() {
  static const connectors::file::FileRecordDecoder decoder;
  return decoder;
}

}  // namespace tidemark::app
