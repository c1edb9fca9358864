#include "tests/support/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace tidemark::testing {

namespace {

using Clock = std::chrono::steady_clock;

// A fresh, empty file for one captured stream; returns its descriptor.
int capture_file(std::filesystem::path& path, const char* stream) {
  std::string pattern = (std::filesystem::temp_directory_path() / ("tidemark-e2e-" + std::string(stream) + "-XXXXXX")).string();
  const int fd = mkstemp(pattern.data());
  if (fd < 0) throw std::runtime_error("mkstemp " + pattern + ": " + std::strerror(errno));
  path = pattern;
  return fd;
}

std::vector<std::string> environment_with(const EnvironmentChanges& changes) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string name(text.substr(0, text.find('=')));
    if (!changes.contains(name)) env.emplace_back(text);
  }
  for (const auto& [name, value] : changes) {
    if (value) env.push_back(name + "=" + *value);
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (auto& text : strings) result.push_back(text.data());
  result.push_back(nullptr);
  return result;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ProcessOptions for_tidemark(ProcessOptions options) {
  options.env.try_emplace("TIDEMARK_DATABASE_URL", std::nullopt);
  options.env.try_emplace("TIDEMARK_FAILPOINTS", std::nullopt);
  return options;
}

}  // namespace

Process::Process(const std::string& program, const std::vector<std::string>& args, const ProcessOptions& options)
    : timeout_(options.timeout) {
  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> argv_strings{program};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings = environment_with(options.env);
  const std::vector<char*> argv = pointers(argv_strings);
  const std::vector<char*> envp = pointers(env_strings);
  const std::string directory = options.working_directory.string();

  const int out_fd = capture_file(out_path_, "out");
  const int err_fd = capture_file(err_path_, "err");
  pid_ = fork();
  if (pid_ < 0) {
    const int error = errno;
    close(out_fd);
    close(err_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(error));
  }
  if (pid_ == 0) {
    const int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    close(null_fd);
    close(out_fd);
    close(err_fd);
    if (!directory.empty() && chdir(directory.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    static constexpr char kMessage[] = "process helper: execve failed\n";
    [[maybe_unused]] const auto ignored = write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    _exit(127);
  }
  close(out_fd);
  close(err_fd);
}

Process::~Process() {
  if (running()) {
    kill(SIGKILL);
    wait();
  }
  std::error_code ignored;
  std::filesystem::remove(out_path_, ignored);
  std::filesystem::remove(err_path_, ignored);
}

bool Process::running() {
  if (status_) return false;
  int status = 0;
  const pid_t reaped = waitpid(pid_, &status, WNOHANG);
  if (reaped == pid_) status_ = status;
  return !status_;
}

void Process::kill(int signal) {
  if (!status_) ::kill(pid_, signal);
}

ProcessResult Process::wait() {
  const auto deadline = Clock::now() + timeout_;
  while (running()) {
    if (Clock::now() >= deadline) {
      kill(SIGKILL);
      int status = 0;
      waitpid(pid_, &status, 0);
      status_ = status;
      return collect(/*timed_out=*/true);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return collect(/*timed_out=*/false);
}

ProcessResult Process::collect(bool timed_out) {
  ProcessResult result;
  result.timed_out = timed_out;
  result.pid = pid_;
  if (WIFEXITED(*status_)) result.exit_code = WEXITSTATUS(*status_);
  if (WIFSIGNALED(*status_)) result.exit_code = 128 + WTERMSIG(*status_);
  result.out = slurp(out_path_);
  result.err = slurp(err_path_);
  return result;
}

ProcessResult run_process(const std::string& program, const std::vector<std::string>& args,
                          const ProcessOptions& options) {
  Process process(program, args, options);
  return process.wait();
}

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string folder; std::getline(folders, folder, ':');) {
    const auto candidate = std::filesystem::path(folder) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

ProcessResult run_tidemark(const std::vector<std::string>& args, const ProcessOptions& options) {
  return run_process(TIDEMARK_BINARY, args, for_tidemark(options));
}

std::unique_ptr<Process> start_tidemark(const std::vector<std::string>& args, const ProcessOptions& options) {
  return std::make_unique<Process>(TIDEMARK_BINARY, args, for_tidemark(options));
}

}  // namespace tidemark::testing
