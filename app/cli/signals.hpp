#pragma once
// The one way every long-running command stops on SIGINT/SIGTERM: an asio::signal_set on
// an io_context (asio's own handler only wakes the io_context, so no code of ours runs in
// signal context and any thread may take the signal). The first signal asks the command
// to stop gracefully; what a second one does is the command's (docs/cli.md).
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

namespace tidemark::app {

// Blocks SIGINT/SIGTERM in the calling thread and so in every thread it starts afterwards:
// call it before the command starts threads. A signal that comes before StopSignals waits
// is then held (not fatal), and taken by StopSignals' thread once it waits.
void block_stop_signals();

enum class SecondSignal {
  kExitAtOnce,  // exit 128 + signal at once (serve: the open batch rolls back)
  kStopAgain,   // ask again (relay: a stop is idempotent)
};

class StopSignals {
 public:
  // Waits on `io` (which the caller runs) until cancel(); calls `stop(signal)` on the io
  // thread. Unblocks the signals in the calling thread (see block_stop_signals).
  StopSignals(boost::asio::io_context& io, std::function<void(int signal)> stop, SecondSignal second);
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Stops waiting (the default dispositions come back), so that io_context::run() can
  // return. Call on the io thread.
  void cancel();

 private:
  void wait();

  boost::asio::signal_set signals_;
  std::function<void(int signal)> stop_;
  SecondSignal second_;
  bool stopping_ = false;
  bool cancelled_ = false;
};

// Runs `work` (blocking) on a thread of its own while this thread waits for the stop
// signals; `stop` (on this thread) must make `work` return. Rethrows what `work` threw.
void run_until_stopped(const std::function<void()>& work, const std::function<void(int signal)>& stop,
                       SecondSignal second);

}  // namespace tidemark::app
