#pragma once
// An awaitable run to its end from a caller that is not a coroutine: on an io_context of the
// calling thread, which returns its value or rethrows its exception. For one-shot callers
// outside every io_context (a single delivery in the tests and the benchmark).
#include <future>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

namespace tidemark::pipeline::async {

template <typename T>
T run_to_end(boost::asio::awaitable<T> awaitable) {
  boost::asio::io_context io(1);
  std::future<T> result = boost::asio::co_spawn(io, std::move(awaitable), boost::asio::use_future);
  io.run();
  return result.get();
}

}  // namespace tidemark::pipeline::async
