#include "app/wiring/run_request.hpp"

#include "app/wiring/registry.hpp"

namespace tidemark::app {

pipeline::RunRequest request_from_config(const app::config::PipelineConfig& config,
                                         const pipeline::EntityDeclaration& entity) {
  pipeline::RunRequest request;
  request.pipeline = config.name;
  request.entity = entity;
  request.batch_size = config.batch_size;
  request.max_batch_bytes = config.max_batch_bytes;
  request.max_rejected = config.max_rejected;
  request.destinations = config.destination_names();
  request.open_source = [open = source_factory(config.source), source = config.source, entity] {
    return open(source, entity);
  };
  return request;
}

std::vector<pipeline::RunRequest> partition_requests(const app::config::PipelineConfig& config,
                                                     const pipeline::EntityDeclaration& entity) {
  if (!config.source.capabilities().partitioned) return {request_from_config(config, entity)};
  std::vector<pipeline::RunRequest> requests;
  for (int partition = 0; partition < config.source.partition_count(); ++partition) {
    app::config::PipelineConfig one = config;
    one.source = config.source.partition(partition);
    requests.push_back(request_from_config(one, entity));
  }
  return requests;
}

}  // namespace tidemark::app
