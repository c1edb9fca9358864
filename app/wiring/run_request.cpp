#include "app/wiring/run_request.hpp"

#include "app/wiring/registry.hpp"
#include "connectors/file/file_record_decoder.hpp"

namespace tidemark::app {

pipeline::RunRequest request_from_config(const pipeline::PipelineConfig& config,
                                         const pipeline::EntityDeclaration& entity) {
  pipeline::RunRequest request;
  request.pipeline = config.name;
  request.entity = entity;
  request.batch_size = config.batch_size;
  request.max_batch_bytes = config.max_batch_bytes;
  request.max_rejected = config.max_rejected;
  request.destinations = config.destination_names();
  request.open_source = [open = source_factory(config.source.kind), source = config.source, entity] {
    return open(source, entity);
  };
  return request;
}

const pipeline::RecordDecoder& quarantine_decoder() {
  static const connectors::file::FileRecordDecoder decoder;
  return decoder;
}

}  // namespace tidemark::app
