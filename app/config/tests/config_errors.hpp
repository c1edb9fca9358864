#pragma once
// What the config tests share: the error a configuration text gives, and a pipeline around a
// source written on line 3.
#include <string>
#include <variant>

#include "app/config/config.hpp"

namespace tidemark::app::config {

// The message of the ConfigError that parsing `yaml` throws ("" when it parses).
inline std::string config_error(const std::string& yaml) {
  try {
    parse_config(yaml, "config.yaml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

// A source's options of each kind (std::bad_variant_access when it is of another kind).
inline const connectors::file::FileSourceOptions& file_of(const SourceConfig& source) {
  return std::get<connectors::file::FileSourceOptions>(source.options);
}
inline const connectors::postgres::Options& postgres_of(const SourceConfig& source) {
  return std::get<connectors::postgres::Options>(source.options);
}
inline const connectors::http_api::HttpSourceOptions& http_of(const SourceConfig& source) {
  return std::get<connectors::http_api::HttpSourceOptions>(source.options);
}
inline const connectors::nats::NatsSourceOptions& nats_of(const SourceConfig& source) {
  return std::get<connectors::nats::NatsSourceOptions>(source.options);
}

// A pipeline `orders` whose source (line 3) is `source`.
inline std::string pipeline_with(const std::string& source) {
  return "pipelines:\n  orders:\n    source: " + source + "\n";
}

}  // namespace tidemark::app::config
