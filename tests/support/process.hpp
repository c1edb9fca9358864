#pragma once
// Runs a program (the tidemark binary, by default) as a real child process for end-to-end
// tests: fork/exec with an argument vector (no shell), an environment derived from ours,
// stdout and stderr captured through temporary files (no pipe can fill up and block the
// child), in the foreground with a timeout or in the background to be killed later.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tidemark::testing {

struct ProcessResult {
  // The exit status, or 128 + the signal number when a signal ended the process (as a
  // shell reports it: a SIGKILL is 137, the same as a failpoint's _exit(137)).
  int exit_code = -1;
  pid_t pid = -1;  // the child's: tidemark names its database sessions 'tidemark pid <pid>'
  std::string out;
  std::string err;
  bool timed_out = false;  // killed by the harness after the timeout

  // Standard output then standard error: where a message is looked for when either may hold it.
  std::string both() const { return out + err; }
};

// Changes to the inherited environment: a value sets the variable, nullopt removes it.
using EnvironmentChanges = std::map<std::string, std::optional<std::string>>;

struct ProcessOptions {
  EnvironmentChanges env;
  std::filesystem::path working_directory;  // empty: the test's own
  std::chrono::milliseconds timeout{std::chrono::minutes(3)};
};

// A started child. The destructor kills it (SIGKILL) if it still runs, so that a failing
// test never leaves a process behind.
class Process {
 public:
  Process(const std::string& program, const std::vector<std::string>& args, const ProcessOptions& options = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // True while the child has not exited (reaps it when it has).
  bool running();
  void kill(int signal);
  // Waits for the exit (SIGKILL after the timeout) and returns what the child printed.
  ProcessResult wait();

 private:
  ProcessResult collect(bool timed_out);

  pid_t pid_ = -1;
  std::optional<int> status_;  // the raw wait status once reaped
  std::chrono::milliseconds timeout_;
  std::filesystem::path out_path_;
  std::filesystem::path err_path_;
};

// Runs `program` to completion.
ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const ProcessOptions& options = {});

// The full path of `name` on PATH; empty when it is not installed (tests that need a tool
// such as promtool or script skip then).
std::string find_program(const std::string& name);

// The tidemark binary under test (TIDEMARK_BINARY). TIDEMARK_DATABASE_URL and
// TIDEMARK_FAILPOINTS are removed from the inherited environment unless `options` set them,
// so that a developer's shell cannot change what a test runs against.
ProcessResult run_tidemark(const std::vector<std::string>& args, const ProcessOptions& options = {});
std::unique_ptr<Process> start_tidemark(const std::vector<std::string>& args, const ProcessOptions& options = {});

}  // namespace tidemark::testing
