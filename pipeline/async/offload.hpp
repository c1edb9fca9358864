#pragma once
// Blocking work (a file read, libpqxx) handed from a coroutine to a thread pool and
// co_awaited, so the coroutine's io_context never blocks (docs/architecture.md,
// "Concurrency: one model"). Shared by the run's stages and the relay.
//
// GCC 12 miscompiles some coroutine frames (temporaries with destructors in a co_await
// expression, capturing lambdas as coroutines): the coroutines here are free functions that
// take their work by pointer, and their awaitables are named locals.
#include <functional>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace tidemark::pipeline::async {

namespace detail {

inline boost::asio::awaitable<void> run_blocking(const std::function<void()>* work) {
  (*work)();
  co_return;
}

}  // namespace detail

// Runs `*work` on `*pool`; the awaiting coroutine resumes on its own executor, and an
// exception from the work is rethrown there. The work itself cannot be interrupted, and
// `*work` must outlive the co_await.
inline boost::asio::awaitable<void> offload(boost::asio::thread_pool* pool, const std::function<void()>* work) {
  boost::asio::awaitable<void> blocking = detail::run_blocking(work);  // named: not a temporary of the co_await
  co_await boost::asio::co_spawn(*pool, std::move(blocking), boost::asio::use_awaitable);
}

}  // namespace tidemark::pipeline::async
