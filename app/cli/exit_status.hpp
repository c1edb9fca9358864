#pragma once
// The exit code of a command that ended with an exception (docs/cli.md "Exit codes"): 2 for a
// usage or configuration mistake, 1 for everything else. Read from the error's kind alone
// (docs/architecture.md "Errors"); one mapping, for main and for what a run reports in its
// --metrics-file.
#include <exception>

#include "app/cli/commands.hpp"
#include "pipeline/core/error.hpp"

namespace tidemark::app {

constexpr int exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
    case ErrorKind::kConfig:
      return kExitUsage;
    case ErrorKind::kTransient:
    case ErrorKind::kPermanent:
    case ErrorKind::kConflict:
      return kExitFailed;
  }
  return kExitFailed;
}

// The exit code for the exception in flight; call it inside a catch block only.
inline int exit_code_for_current_exception() {
  try {
    throw;
  } catch (const Error& error) {
    return exit_code_for(error.kind());
  } catch (...) {
    return kExitFailed;  // a failure nothing classified: a bug or the world, not the user's mistake
  }
}

}  // namespace tidemark::app
