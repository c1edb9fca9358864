#pragma once
// What the config tests share: the error a configuration text gives, and a pipeline around a
// source written on line 3.
#include <string>

#include "app/config/config.hpp"

namespace tidemark::pipeline {

// The message of the ConfigError that parsing `yaml` throws ("" when it parses).
inline std::string config_error(const std::string& yaml) {
  try {
    parse_config(yaml, "config.yaml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

// A pipeline `orders` whose source (line 3) is `source`.
inline std::string pipeline_with(const std::string& source) {
  return "pipelines:\n  orders:\n    source: " + source + "\n";
}

}  // namespace tidemark::pipeline
