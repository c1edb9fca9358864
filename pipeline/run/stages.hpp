#pragma once
// Two pipeline stages on Boost.Asio (docs/architecture.md "A batch, step by step"): a producer and a consumer coroutine on
// one io_context, linked by a concurrent channel that holds no buffer, each handing its blocking
// work (a file read, a libpqxx commit) to a thread pool it co_awaits. The Asio headers stay
// in stages.cpp: this header is included by the run controller, which must not see them.
#include <functional>
#include <memory>
#include <optional>
#include <utility>

namespace tidemark::pipeline {

// How the stages ended. An error of either stage is an exception instead.
enum class StagesEnd {
  kDrained,  // the producer had no more items and every item it made was consumed
  kStopped,  // stop was requested between two items: the producer was cancelled
};

namespace detail {

struct StageItem {
  virtual ~StageItem() = default;
};

template <class T>
struct TypedStageItem final : StageItem {
  explicit TypedStageItem(T item) : value(std::move(item)) {}
  T value;
};

struct ErasedStages {
  std::function<std::unique_ptr<StageItem>()> produce;  // nullptr: nothing more
  std::function<void(StageItem&)> consume;
  std::function<bool()> stop_requested;
};

StagesEnd run_erased_stages(ErasedStages stages);

}  // namespace detail

// Runs `produce` and `consume` as two stages and returns once both have ended; the calling
// thread runs the io_context, `produce` and `consume` run in order, each on a pool thread
// of its own. While item N is consumed, item N+1 is produced and then waits for the
// consumer: at most two items are alive at once, so memory stays O(item).
// - `produce` returns nullopt when it has nothing more.
// - `stop_requested` is asked before each item is taken: once it says yes, the items not
//   yet taken are dropped, the producer is cancelled at its next hand-over, and the result
//   is kStopped (an error the producer met meanwhile is dropped with them).
// - An exception from `produce` ends production; it is rethrown once `consume` has had
//   every item made before it.
// - An exception from `consume` cancels the producer and is rethrown once it has ended.
template <class T>
StagesEnd run_two_stages(std::function<std::optional<T>()> produce, std::function<void(T&)> consume,
                         std::function<bool()> stop_requested) {
  detail::ErasedStages stages;
  stages.produce = [produce = std::move(produce)]() -> std::unique_ptr<detail::StageItem> {
    std::optional<T> item = produce();
    if (!item) return nullptr;
    return std::make_unique<detail::TypedStageItem<T>>(std::move(*item));
  };
  stages.consume = [consume = std::move(consume)](detail::StageItem& item) {
    consume(static_cast<detail::TypedStageItem<T>&>(item).value);
  };
  stages.stop_requested = std::move(stop_requested);
  return detail::run_erased_stages(std::move(stages));
}

}  // namespace tidemark::pipeline
