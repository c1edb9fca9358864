// pipeline/async/run_to_end.hpp: the awaitable's value comes back, and so does its exception.
#include <gtest/gtest.h>

#include <stdexcept>

#include "pipeline/async/run_to_end.hpp"

namespace tidemark::pipeline::async {
namespace {

boost::asio::awaitable<int> answer(bool fail) {
  if (fail) throw std::runtime_error("no answer");
  co_return 42;
}

TEST(RunToEnd, ReturnsTheAwaitablesValue) { EXPECT_EQ(run_to_end(answer(false)), 42); }

TEST(RunToEnd, RethrowsTheAwaitablesException) { EXPECT_THROW(run_to_end(answer(true)), std::runtime_error); }

}  // namespace
}  // namespace tidemark::pipeline::async
