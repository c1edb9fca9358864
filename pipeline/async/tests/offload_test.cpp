// pipeline/async/offload.hpp: blocking work runs on the pool, the coroutine resumes on its own
// executor, and the work's exception reaches the coroutine.
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "pipeline/async/offload.hpp"

namespace tidemark::pipeline::async {
namespace {

namespace asio = boost::asio;

struct Observed {
  bool resumed_on_io = false;
  std::thread::id resumed_thread;
  std::string caught;
};

asio::awaitable<void> offload_and_observe(asio::io_context* io, asio::thread_pool* pool,
                                          const std::function<void()>* work, Observed* observed) {
  try {
    co_await offload(pool, work);
  } catch (const std::exception& error) {
    observed->caught = error.what();
  }
  observed->resumed_on_io = io->get_executor().running_in_this_thread();
  observed->resumed_thread = std::this_thread::get_id();
}

Observed run(const std::function<void()>& work) {
  Observed observed;
  asio::io_context io;
  asio::thread_pool pool(1);
  std::exception_ptr failure;
  asio::co_spawn(io, offload_and_observe(&io, &pool, &work, &observed),
                 [&failure](std::exception_ptr error) { failure = error; });
  io.run();
  pool.join();
  if (failure) std::rethrow_exception(failure);
  return observed;
}

TEST(Offload, RunsTheWorkOnThePoolAndResumesOnTheAwaitingExecutor) {
  std::thread::id work_thread;
  const auto seen = run([&work_thread] { work_thread = std::this_thread::get_id(); });
  EXPECT_NE(work_thread, std::thread::id());
  EXPECT_NE(work_thread, std::this_thread::get_id()) << "the work ran on the io_context's thread";
  EXPECT_TRUE(seen.resumed_on_io);
  EXPECT_EQ(seen.resumed_thread, std::this_thread::get_id());
  EXPECT_EQ(seen.caught, "");
}

TEST(Offload, AnExceptionOfTheWorkIsRethrownInTheAwaitingCoroutine) {
  const auto seen = run([] { throw std::runtime_error("the disk is gone"); });
  EXPECT_EQ(seen.caught, "the disk is gone");
  EXPECT_TRUE(seen.resumed_on_io) << "the coroutine resumed on the pool's thread after the exception";
  EXPECT_EQ(seen.resumed_thread, std::this_thread::get_id());
}

}  // namespace
}  // namespace tidemark::pipeline::async
