#include "app/cli/signals.hpp"

#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <exception>
#include <thread>
#include <utility>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace tidemark::app {

namespace asio = boost::asio;

namespace {

sigset_t stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  return signals;
}

}  // namespace

void block_stop_signals() {
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

StopSignals::StopSignals(asio::io_context& io, std::function<void(int signal)> stop, SecondSignal second)
    : signals_(io, SIGINT, SIGTERM), stop_(std::move(stop)), second_(second) {
  wait();
  // asio's handler is installed now: a signal held since block_stop_signals reaches it.
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
}

void StopSignals::cancel() {
  cancelled_ = true;
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  signals_.clear(ignored);
}

void StopSignals::wait() {
  signals_.async_wait([this](const boost::system::error_code& error, int signal) {
    if (error) return;  // cancelled
    if (stopping_ && second_ == SecondSignal::kExitAtOnce) {
      // Still safe: a batch commits in one transaction, which PostgreSQL rolls back when
      // the connection goes; the checkpoint never moves without its batch.
      spdlog::warn("signal {} again: exiting now", signal);
      spdlog::default_logger()->flush();
      std::_Exit(128 + signal);
    }
    stopping_ = true;
    stop_(signal);
    if (!cancelled_) wait();  // `stop` may have cancelled the wait itself
  });
}

void run_until_stopped(const std::function<void()>& work, const std::function<void(int signal)>& stop,
                       SecondSignal second) {
  asio::io_context io;
  StopSignals signals(io, stop, second);
  std::exception_ptr failure;
  // The work guard keeps io.run() going until `work` has returned and cancelled the wait.
  std::thread worker([&, guard = asio::make_work_guard(io)] {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
    asio::post(io, [&signals] { signals.cancel(); });
  });
  io.run();
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace tidemark::app
