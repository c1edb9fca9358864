#include "tests/support/terminal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "pipeline/core/file_descriptor.hpp"

extern char** environ;

namespace tidemark::testing {

namespace {

using Clock = std::chrono::steady_clock;

using pipeline::FileDescriptor;

std::string failed(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

// The multiplexer ("ptmx") of a devpts instance mounted for this process alone: created
// with fsopen and fsmount but attached nowhere, it goes away with its last descriptor.
// Needs CAP_SYS_ADMIN (root).
FileDescriptor open_own_multiplexer(std::string& error) {
  const FileDescriptor context(::fsopen("devpts", FSOPEN_CLOEXEC));
  if (context.get() < 0) return error = failed("fsopen devpts"), FileDescriptor();
  if (::fsconfig(context.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    return error = failed("fsconfig devpts"), FileDescriptor();
  }
  const FileDescriptor mount(::fsmount(context.get(), FSMOUNT_CLOEXEC, 0));
  if (mount.get() < 0) return error = failed("fsmount devpts"), FileDescriptor();
  FileDescriptor multiplexer(::openat(mount.get(), "ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (multiplexer.get() < 0) error = failed("open ptmx of the own devpts");
  return multiplexer;
}

// The multiplexer of a new, unlocked pseudo-terminal: /dev/ptmx where /dev/pts is a
// mounted devpts, else one of the process's own devpts. Invalid with `missing` set to what
// to do when neither works.
FileDescriptor open_multiplexer(std::string& missing) {
  FileDescriptor multiplexer(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  const std::string shared_error = multiplexer.get() < 0 ? failed("open /dev/ptmx") : "";
  std::string own_error;
  if (multiplexer.get() < 0) multiplexer = open_own_multiplexer(own_error);
  if (multiplexer.get() < 0) {
    missing = "no pseudo-terminal can be opened here: /dev/pts is not a mounted devpts (" + shared_error +
              ") and the test cannot mount a devpts of its own (" + own_error +
              "; that needs root: CAP_SYS_ADMIN). Mount one: `mount -t devpts devpts /dev/pts` (in a chroot, from outside: "
              "`mount --bind /dev/pts CHROOT/dev/pts`), or run the tests as root";
    return multiplexer;
  }
  if (::unlockpt(multiplexer.get()) != 0) {
    missing = failed("unlockpt");
    return FileDescriptor();
  }
  return multiplexer;
}

// `env` applies the environment changes and the working directory, then runs the command
// with sh: the child needs no allocation between fork and exec.
std::vector<std::string> command_line(const std::string& command, const ProcessOptions& options) {
  std::vector<std::string> line{"/usr/bin/env"};
  if (!options.working_directory.empty()) line.push_back("--chdir=" + options.working_directory.string());
  for (const auto& [name, value] : options.env) {
    if (!value) line.insert(line.end(), {"-u", name});
  }
  for (const auto& [name, value] : options.env) {
    if (value) line.push_back(name + "=" + *value);
  }
  line.insert(line.end(), {"/bin/sh", "-c", command});
  return line;
}

// Reads what the terminal shows until every descriptor of its other end is closed (EIO) or
// the deadline passes; false on the deadline.
bool read_until_closed(int multiplexer, Clock::time_point deadline, std::string& out) {
  char buffer[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd ready{multiplexer, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(left)) < 0 && errno != EINTR) throw std::runtime_error(failed("poll"));
    const ssize_t got = ::read(multiplexer, buffer, sizeof buffer);
    if (got > 0) out.append(buffer, static_cast<std::size_t>(got));
    if (got == 0 || (got < 0 && errno == EIO)) return true;
    if (got < 0 && errno != EAGAIN && errno != EINTR) throw std::runtime_error(failed("read the terminal"));
  }
}

}  // namespace

std::string pseudo_terminal_missing() {
  std::string missing;
  open_multiplexer(missing);
  return missing;
}

ProcessResult run_on_terminal(const std::string& command, const ProcessOptions& options) {
  std::string missing;
  const FileDescriptor multiplexer = open_multiplexer(missing);
  if (multiplexer.get() < 0) throw std::runtime_error(missing);
  // The other end through the multiplexer, not through a path under /dev/pts.
  FileDescriptor terminal(::ioctl(multiplexer.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (terminal.get() < 0) throw std::runtime_error(failed("TIOCGPTPEER"));

  std::vector<std::string> line = command_line(command, options);
  std::vector<char*> argv;
  for (auto& word : line) argv.push_back(word.data());
  argv.push_back(nullptr);

  ProcessResult result;
  result.pid = ::fork();
  if (result.pid < 0) throw std::runtime_error(failed("fork"));
  if (result.pid == 0) {
    // A session of its own with the terminal as its controlling terminal, as a login shell has.
    ::setsid();
    ::ioctl(terminal.get(), TIOCSCTTY, 0);
    for (const int stream : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) ::dup2(terminal.get(), stream);
    ::execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  // Closed here, the child's copies are the terminal's last: the multiplexer reads EIO once they are gone.
  ::close(terminal.release());

  const bool closed = read_until_closed(multiplexer.get(), Clock::now() + options.timeout, result.out);
  if (!closed) {
    ::kill(result.pid, SIGKILL);
    result.timed_out = true;
  }
  int status = 0;
  ::waitpid(result.pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  return result;
}

}  // namespace tidemark::testing
