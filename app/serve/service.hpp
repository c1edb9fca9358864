#pragma once
// `tidemark serve`: one process, one io_context running the HTTP API, the scheduler, the
// housekeeping timers, the outbox relay's loop and its supervision, and the stop; the
// blocking work (runs, database requests, the relay's statements) on thread pools whose
// results come back to it.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "app/serve/api.hpp"
#include "metrics/metrics.hpp"
#include "app/config/config.hpp"

namespace tidemark::app::serve {

struct ServeOptions {
  app::config::Config config;
  std::string database_url;  // migrated already
  std::string listen;        // HOST:PORT; port 0 picks a free one
  ApiOptions api;
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};  // per read/write of a connection
  // How long a graceful stop waits for the batches in hand before giving up (exit 1).
  std::chrono::milliseconds shutdown_timeout{std::chrono::minutes(2)};
  bool run_relay = true;        // deliver the outbox to the config's http destinations
  std::size_t worker_threads = 4;
};

class Service {
 public:
  // Everything that can be wrong with the configuration throws here (ConfigError), before
  // anything starts; so does an address that cannot be bound (std::runtime_error).
  explicit Service(ServeOptions options);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  unsigned short port() const;
  // The io_context run() runs: the CLI waits for its stop signals on it.
  boost::asio::io_context& io_context();
  // Serves until stopped; returns the exit code (0 after a graceful stop). `on_stopped` runs
  // on the io_context once serve has stopped: it ends whatever else waits there (the CLI's
  // signal wait), so that the io_context runs out of work and run() returns.
  int run(std::function<void()> on_stopped = {});
  // Thread-safe: a graceful stop, as for the first SIGTERM.
  void request_stop();
  metrics::Metrics& metrics();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tidemark::app::serve
