#pragma once
// The error of a destination whose options cannot be used: a URL that is not http:// or
// https://, a trust store that does not load. Thrown when the sink is built, before any
// delivery; app/wiring reports it as a configuration error (exit 2), with the same message.
#include <stdexcept>

#include "pipeline/core/error.hpp"

namespace tidemark::connectors::http {

struct OptionsError : tidemark::Error {
  explicit OptionsError(const std::string& message) : tidemark::Error(tidemark::ErrorKind::kConfig, message) {}
};

}  // namespace tidemark::connectors::http
