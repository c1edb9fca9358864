#pragma once
// How `run` and `serve` turn a pipeline's configuration into a run request: one place.
#include <vector>

#include "app/config/config.hpp"
#include "pipeline/run/run_controller.hpp"

namespace tidemark::app {

// The run request of a pipeline: its entity (`entity`, the declaration config names), its
// source (opened by the factory of its kind, decoding the entity's fields), format, batch size
// and destinations.
pipeline::RunRequest request_from_config(const app::config::PipelineConfig& config,
                                         const pipeline::EntityDeclaration& entity);

// The run requests of a pipeline, one per partition of a partitioned source (kind nats: the
// partitions in order, each its own source, checkpoint and run), else the one request.
std::vector<pipeline::RunRequest> partition_requests(const app::config::PipelineConfig& config,
                                                     const pipeline::EntityDeclaration& entity);

}  // namespace tidemark::app
