#pragma once
// The relay's LISTEN connection (`relay` and serve's relay, not `relay --once`): a commit that
// wrote outbox rows NOTIFYs kOutboxChannel, and the notification ends the loop's idle wait at
// once; polling stays the fallback. Connected in the background on the relay's database
// threads, read on the loop's strand; a failure drops it, and it is connected again after a
// doubling delay. Internal to the relay (relay.cpp): it includes Asio and libpqxx.
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <pqxx/pqxx>

#include "pipeline/core/backoff.hpp"
#include "pipeline/core/duration.hpp"

namespace tidemark::pipeline::relay {

class ListenWaker {
 public:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

  // Connects to `database_url` on `database_threads`; `wake` ends the loop's wait (on the
  // strand). `retry` is the first delay before connecting again, `poll_interval` what the
  // warning says polling does meanwhile.
  ListenWaker(std::string database_url, boost::asio::thread_pool& database_threads, std::function<void()> wake,
              Duration retry, Duration poll_interval);

  // A loop begins on `strand`: the connection is due at once.
  void begin(Strand strand);
  // On the strand: true when a notification came (or the connection was just made, so that
  // what was committed while nobody listened is looked for once). Starts connecting when it
  // is due and not `stopping`; reads what the socket holds and awaits more beside the loop's
  // wait. Any failure drops the connection.
  bool look(bool stopping);
  // Its completion touches the loop's state: the loop waits for it before ending.
  bool connecting() const { return connecting_now_; }
  bool connected() const { return listener_ != nullptr; }
  // When the connection is due to be made again (while neither connected nor connecting).
  std::chrono::steady_clock::time_point next_connect() const { return next_connect_; }
  // Closes the connection; a non-empty `why` is a failure, logged, and delays the next.
  void drop(const std::string& why);
  // The loop has ended: the connection is closed and the strand let go, so that the
  // io_context it belongs to may go (relay --once's own goes when drain() returns).
  void end();

 private:
  void connected(std::exception_ptr failure);

  std::string database_url_;
  boost::asio::thread_pool& database_threads_;
  std::function<void()> wake_;
  Duration poll_interval_;
  std::optional<Strand> strand_;

  // The connection and a duplicate of its socket, on the strand; while `connecting_now_`, a
  // database thread makes `connecting_` with `connect_`.
  std::unique_ptr<pqxx::connection> listener_;
  std::optional<boost::asio::posix::stream_descriptor> socket_;
  std::unique_ptr<pqxx::connection> connecting_;
  std::function<void()> connect_;
  bool connecting_now_ = false;
  bool armed_ = false;  // a wait on socket_ is outstanding
  bool fresh_ = false;  // connected since the last look
  std::chrono::steady_clock::time_point next_connect_{};
  DoublingDelay delay_;
};

}  // namespace tidemark::pipeline::relay
