#include "pipeline/run/stages.hpp"

#include <exception>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "pipeline/async/offload.hpp"

namespace tidemark::pipeline::detail {

namespace {

namespace asio = boost::asio;
using async::offload;

using ItemPtr = std::unique_ptr<StageItem>;
// A null item is the producer's last message: it has nothing more (or failed).
using Channel = asio::experimental::concurrent_channel<void(boost::system::error_code, ItemPtr)>;

// Shared by the two stage coroutines. GCC 12 miscompiles some coroutine frames (see
// pipeline/async/offload.hpp), so the coroutines below are free functions that take this
// state by pointer and keep their items here or in named locals.
struct Stages {
  Stages(ErasedStages stage_callbacks, asio::io_context& io)
      : callbacks(std::move(stage_callbacks)), channel(io, 0) {}

  ErasedStages callbacks;
  // No buffer: a send completes when the consumer takes the item, so the one item that
  // waits between the stages waits in the producer's hand. With a buffer of 1 a third item
  // would be made meanwhile, a third batch in memory (docs/performance.md). Staging ahead
  // relies on it too: the producer stages batch N + 2 on batch N's database session, which
  // must be done with N, and N + 1 is taken only once N is committed (Committer::stage_ahead).
  Channel channel;
  ItemPtr produced;  // set by the producer's work on the pool, sent by its coroutine
  ItemPtr taken;     // received by the consumer's coroutine, consumed by its work on the pool
  // The items the consumer has finished, freed by the producer's next work (its thread made
  // them); moved to `freed` by the producer's coroutine, so each is touched by one thread at a
  // time. Two can wait here: a consumer that was waiting for the producer takes the next item
  // before the producer has resumed, and may finish it before the producer's next work begins.
  std::vector<ItemPtr> finished;
  std::vector<ItemPtr> freed;
  std::exception_ptr producer_error;
  std::exception_ptr consumer_error;
  bool stopped = false;
  // Each stage's blocking work on a thread of its own, so a read and a commit overlap and
  // each stage's allocations stay in one malloc arena: one two-thread pool that ran either
  // stage's work on either thread spread them over two and raised the peak RSS.
  // Declared last, so destroyed (stopped and joined) before the state their work touches.
  asio::thread_pool produce_pool{1};
  asio::thread_pool consume_pool{1};
};

asio::awaitable<void> produce_stage(Stages* stages) {
  // Freeing a batch's records takes milliseconds: done here, on the thread that made them
  // (its own malloc arena), while the consumer commits the next item.
  const std::function<void()> produce = [stages] {
    stages->freed.clear();
    stages->produced = stages->callbacks.produce();
  };
  bool more = true;
  while (more) {
    stages->freed.swap(stages->finished);  // `freed` is empty: its last work cleared it
    try {
      co_await offload(&stages->produce_pool, &produce);
    } catch (...) {
      // Ends production; the consumer rethrows it after the items made before it.
      stages->producer_error = std::current_exception();
      stages->produced.reset();
    }
    more = stages->produced != nullptr;
    boost::system::error_code cancelled;
    co_await stages->channel.async_send(boost::system::error_code(), std::move(stages->produced),
                                        asio::redirect_error(asio::use_awaitable, cancelled));
    // The consumer has ended (stop or its own error): what this stage holds is dropped.
    if (cancelled) break;
    // A hand-over to a consumer that was busy resumes this coroutine before the consumer's
    // (the channel completes the send first): let the consumer start its item before this
    // stage's work competes with it for a core. Both woken at once, the commit's thread
    // waited up to a scheduler tick.
    co_await asio::post(asio::use_awaitable);
  }
}

asio::awaitable<void> consume_stage(Stages* stages) {
  const std::function<void()> consume = [stages] { stages->callbacks.consume(*stages->taken); };
  try {
    while (true) {
      // Between two items, never during one: the item in hand is always finished.
      if (stages->callbacks.stop_requested && stages->callbacks.stop_requested()) {
        stages->stopped = true;
        break;
      }
      ItemPtr item = co_await stages->channel.async_receive(asio::use_awaitable);
      if (!item) co_return;  // drained: the producer has ended and sent everything it made
      stages->taken = std::move(item);
      co_await offload(&stages->consume_pool, &consume);
      stages->finished.push_back(std::move(stages->taken));
    }
  } catch (...) {
    stages->consumer_error = std::current_exception();
  }
  // Cancels the producer: a hand-over it waits in ends now, any later one is refused.
  stages->channel.cancel();
  stages->channel.close();
}

}  // namespace

StagesEnd run_erased_stages(ErasedStages callbacks) {
  asio::io_context io;
  Stages stages(std::move(callbacks), io);
  asio::co_spawn(io, produce_stage(&stages), asio::detached);
  asio::co_spawn(io, consume_stage(&stages), asio::detached);
  io.run();  // until both stages have ended
  if (stages.consumer_error) std::rethrow_exception(stages.consumer_error);
  if (stages.stopped) return StagesEnd::kStopped;
  if (stages.producer_error) std::rethrow_exception(stages.producer_error);
  return StagesEnd::kDrained;
}

}  // namespace tidemark::pipeline::detail
