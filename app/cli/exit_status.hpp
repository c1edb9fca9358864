#pragma once
// The exit code of a command that ended with an exception (INTERFACE "CLI"): 2 for a usage
// or configuration mistake, 1 for everything else. One mapping, for main and for what a run
// reports in its --metrics-file.
#include <exception>

#include "app/cli/commands.hpp"

namespace tidemark::app {

inline int exit_code_for(const std::exception& error) {
  if (dynamic_cast<const UsageError*>(&error) != nullptr) return kExitUsage;
  if (dynamic_cast<const pipeline::ConfigError*>(&error) != nullptr) return kExitUsage;
  return kExitFailed;
}

}  // namespace tidemark::app
