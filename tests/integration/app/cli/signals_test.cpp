// The one stop-signal path of the long-running commands (app/cli/signals.hpp):
// SIGTERM/SIGINT reach the command's stop callback on its io_context, a relay's second
// signal asks again, and run_until_stopped hands back what the work threw. Pure, but here
// because this binary is the one that links the CLI library. (A serve's second signal
// exits the process: ServeProcessTest covers it against a real process.)
#include <atomic>
#include <csignal>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/post.hpp>

#include "app/cli/signals.hpp"

namespace tidemark::app {
namespace {

TEST(StopSignalsTest, EverySignalAsksTheCommandToStopWhenTheSecondIsNotAnExit) {
  boost::asio::io_context io;
  std::vector<int> received;
  StopSignals signals(
      io,
      [&](int signal) {
        received.push_back(signal);
        if (received.size() == 2) signals.cancel();  // then io.run() has nothing left and returns
        else std::raise(SIGINT);
      },
      SecondSignal::kStopAgain);
  boost::asio::post(io, [] { std::raise(SIGTERM); });
  io.run();
  EXPECT_EQ(received, (std::vector<int>{SIGTERM, SIGINT}));
}

TEST(StopSignalsTest, RunUntilStoppedStopsTheWorkOnASignalAndRethrowsWhatItThrew) {
  std::atomic<bool> stop{false};
  int stops = 0;
  EXPECT_THROW(run_until_stopped(
                   [&] {
                     std::raise(SIGTERM);
                     while (!stop) std::this_thread::yield();
                     throw std::runtime_error("stopped, then failed");
                   },
                   [&](int signal) {
                     EXPECT_EQ(signal, SIGTERM);
                     ++stops;
                     stop = true;
                   },
                   SecondSignal::kExitAtOnce),
               std::runtime_error);
  EXPECT_EQ(stops, 1);
}

}  // namespace
}  // namespace tidemark::app
