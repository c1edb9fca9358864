#pragma once
// The root of the errors Tidemark throws on purpose. Each says what kind of failure it is,
// and the edges read only that kind: the CLI's exit code (app/cli/exit_status.hpp) and the
// API's HTTP status (app/serve/router.cpp) come from one table (docs/architecture.md
// "Errors"), so a new error class picks a kind and is reported the same way everywhere,
// without a list of types to test it against. Pure; no third-party includes.
#include <stdexcept>
#include <string>

namespace tidemark {

enum class ErrorKind {
  kUsage,      // the command line is wrong: the user must change what they typed
  kConfig,     // the configuration is wrong: the user must change the file
  kTransient,  // the world failed for now (the database is down): the same request may succeed later
  kPermanent,  // the work failed and asking again will not help (an I/O error, a refused connection)
  kConflict,   // the state forbids it now (another run holds the pipeline, released already)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace tidemark
