#include "pipeline/relay/listen_waker.hpp"

#include <cctype>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <poll.h>
#include <unistd.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "pipeline/async/offload.hpp"
#include "pipeline/core/error_text.hpp"
#include "pipeline/store/outbox.hpp"
#include "pipeline/store/pg/database.hpp"

namespace tidemark::pipeline::relay {

namespace asio = boost::asio;

namespace {

constexpr Duration kMaxRetry = std::chrono::seconds(30);

asio::awaitable<void> connect_on(asio::thread_pool* threads, const std::function<void()>* connect) {
  co_await async::offload(threads, connect);
}

}  // namespace

ListenWaker::ListenWaker(std::string database_url, asio::thread_pool& database_threads, std::function<void()> wake,
                         Duration retry, Duration poll_interval)
    : database_url_(std::move(database_url)),
      database_threads_(database_threads),
      wake_(std::move(wake)),
      poll_interval_(poll_interval),
      delay_(retry, kMaxRetry) {
  connect_ = [this] {
    auto connection = db::connect(database_url_);
    pqxx::nontransaction(*connection).exec(std::string("LISTEN ") + kOutboxChannel);
    connecting_ = std::move(connection);
  };
}

void ListenWaker::begin(Strand strand) {
  strand_ = std::move(strand);
  next_connect_ = {};
  delay_.succeeded();
}

bool ListenWaker::look(bool stopping) {
  if (!listener_) {
    if (!stopping && !connecting_now_ && std::chrono::steady_clock::now() >= next_connect_) {
      connecting_now_ = true;
      asio::co_spawn(*strand_, connect_on(&database_threads_, &connect_),
                     asio::bind_executor(*strand_, [this](std::exception_ptr failure) { connected(std::move(failure)); }));
    }
    return false;
  }
  if (armed_) return false;  // the socket has not become readable since the last read
  bool notified = std::exchange(fresh_, false);
  try {
    // Until the socket holds nothing more: one read may stop short of what came (a backend
    // that was terminated sends its error, then closes; the close shows on the next read).
    for (;;) {
      notified = listener_->get_notifs() > 0 || notified;
      if (!listener_->is_open()) throw std::runtime_error("the connection is closed");
      pollfd readable{listener_->sock(), POLLIN, 0};
      if (::poll(&readable, 1, 0) <= 0) break;
    }
  } catch (const std::exception& error) {
    drop(error.what());
    return false;
  }
  // After the read: what comes from now on makes the socket readable again. The handler
  // only ends the wait; the next look reads the notifications.
  armed_ = true;
  socket_->async_wait(asio::posix::stream_descriptor::wait_read,
                      asio::bind_executor(*strand_, [this](const boost::system::error_code& error) {
                        armed_ = false;
                        if (!error) wake_();
                      }));
  return notified;
}

void ListenWaker::connected(std::exception_ptr failure) {
  connecting_now_ = false;
  try {
    if (failure) std::rethrow_exception(failure);
    listener_ = std::move(connecting_);
    // A duplicate: the descriptor closes its own, libpq its socket.
    const int socket = ::dup(listener_->sock());
    if (socket < 0) throw std::system_error(errno, std::generic_category(), "dup of the connection's socket");
    socket_.emplace(*strand_, socket);
    fresh_ = true;
    delay_.succeeded();
    spdlog::debug("the outbox relay listens on {}", kOutboxChannel);
  } catch (const std::exception& error) {
    connecting_.reset();
    drop(error.what());
  }
  wake_();
}

void ListenWaker::end() {
  drop("");
  strand_.reset();
}

void ListenWaker::drop(const std::string& why) {
  socket_.reset();  // cancels its wait
  listener_.reset();
  if (why.empty()) return;
  std::string reason = redact_urls(why);
  while (!reason.empty() && std::isspace(static_cast<unsigned char>(reason.back())) != 0) reason.pop_back();
  const Duration delay = delay_.failed();
  spdlog::warn("the outbox relay's LISTEN connection failed: {}; it polls every {} ms and connects it again in {} ms",
               reason, poll_interval_.count(), delay.count());
  next_connect_ = std::chrono::steady_clock::now() + delay;
}

}  // namespace tidemark::pipeline::relay
