#include "app/wiring/run_request.hpp"

#include "app/wiring/registry.hpp"
#include "connectors/file/file_record_decoder.hpp"
#include "connectors/http_api/http_source.hpp"
#include "connectors/http_api/record_decoder.hpp"

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

namespace {

// The connector that read a quarantined record decodes it again: the stored format names it.
// "json" (one JSON object) is the http source's and the nats source's alike.
class DecoderByFormat final : public pipeline::RecordDecoder {
 public:
  pipeline::DecodedRecord decode(std::string_view format, std::string_view decode_context, std::string_view raw,
                                 const std::string& origin, const pipeline::RecordLayout& layout) const override {
    if (format == connectors::http_api::kRecordFormat) return http_.decode(format, decode_context, raw, origin, layout);
    return file_.decode(format, decode_context, raw, origin, layout);
  }

 private:
  connectors::file::FileRecordDecoder file_;
  connectors::http_api::HttpRecordDecoder http_;
};

}  // namespace

const pipeline::RecordDecoder& quarantine_decoder() {
  static const DecoderByFormat decoder;
  return decoder;
}

}  // namespace tidemark::app
