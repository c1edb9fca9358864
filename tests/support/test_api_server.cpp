#include "tests/support/test_api_server.hpp"

#include <sys/socket.h>

#include <cctype>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace tidemark::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

struct TestApiServer::State {
  PageShape shape = PageShape::kCursorObject;
  std::size_t page_size = 1;
  mutable std::mutex mutex;
  std::condition_variable changed;
  bool stopping = false;
  std::vector<std::string> records;
  std::string authorization;
  std::deque<ApiFailure> scripted;
  std::string retry_after = "1";
  std::chrono::milliseconds slow_delay{2000};
  std::chrono::milliseconds page_delay{0};
  std::vector<ApiRequest> requests;
  std::size_t connections = 0;
  unsigned short port = 0;
  bool tls = false;
  bool link_back = false;  // the last page names a next page: the first one again

  std::string base_url() const {
    return (tls ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port) + "/v1/orders";
  }
};

namespace {

std::string percent_decode(std::string_view text) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) != 0 &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2])) != 0) {
      decoded += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      decoded += text[i];
    }
  }
  return decoded;
}

// The value of query parameter `name` in a request target, percent-decoded.
std::string query_parameter(std::string_view target, std::string_view name) {
  const auto question = target.find('?');
  if (question == std::string_view::npos) return "";
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const auto amp = std::min(query.find('&'), query.size());
    const auto pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1));
    query.remove_prefix(std::min(amp + 1, query.size()));
  }
  return "";
}

// ':' as the Link header's URL writes it.
std::string percent_encoded(const std::string& cursor) {
  std::string out;
  for (const char c : cursor) out += c == ':' ? std::string("%3A") : std::string(1, c);
  return out;
}

// The records' offset a cursor names: "after:N" is N, anything else the start.
std::size_t offset_of(const std::string& cursor) {
  if (!cursor.starts_with("after:")) return 0;
  return static_cast<std::size_t>(std::stoull(cursor.substr(6)));
}

}  // namespace

class TestApiServer::Server {
 public:
  Server(std::shared_ptr<State> state, const TlsIdentity* tls)
      : state_(std::move(state)), acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    if (tls) {
      tls_.emplace(asio::ssl::context::tls_server);
      SSL_CTX_set_min_proto_version(tls_->native_handle(), TLS1_2_VERSION);
      tls_->use_certificate_chain_file(tls->cert_file.string());
      tls_->use_private_key_file(tls->key_file.string(), asio::ssl::context::pem);
    }
    state_->port = acceptor_.local_endpoint().port();
    state_->tls = tls != nullptr;
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~Server() {
    {
      std::lock_guard lock(state_->mutex);
      state_->stopping = true;
    }
    state_->changed.notify_all();
    beast::error_code ignored;
    acceptor_.cancel(ignored);
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    accept_thread_.join();
    {
      std::lock_guard lock(connections_mutex_);
      for (const auto& connection : connections_) {
        if (connection->socket->is_open()) ::shutdown(connection->socket->native_handle(), SHUT_RDWR);
      }
    }
    for (auto& connection : connections_) connection->thread.join();
  }

 private:
  void accept_loop() {
    for (;;) {
      auto socket = std::make_shared<tcp::socket>(io_);
      beast::error_code error;
      acceptor_.accept(*socket, error);
      {
        std::lock_guard lock(state_->mutex);
        if (state_->stopping) return;
        if (!error) ++state_->connections;
      }
      if (error) continue;
      std::lock_guard lock(connections_mutex_);
      auto connection = std::make_unique<Connection>();
      connection->socket = socket;
      connection->thread = std::thread([this, socket] {
        if (tls_) {
          asio::ssl::stream<tcp::socket&> stream(*socket, *tls_);
          beast::error_code handshake;
          stream.handshake(asio::ssl::stream_base::server, handshake);
          if (!handshake) serve(stream, *socket);
        } else {
          serve(*socket, *socket);
        }
        std::lock_guard guard(connections_mutex_);
        beast::error_code ignored;
        socket->close(ignored);
      });
      connections_.push_back(std::move(connection));
    }
  }

  template <class Stream>
  void serve(Stream& stream, tcp::socket& socket) {
    beast::flat_buffer buffer;
    for (;;) {
      bhttp::request<bhttp::string_body> request;
      beast::error_code error;
      bhttp::read(stream, buffer, request, error);
      if (error) return;
      auto [response, failure] = handle(request);
      if (failure == ApiFailure::kCut) {
        // The status line, the headers and half the body; then the connection goes.
        response.prepare_payload();
        bhttp::response_serializer<bhttp::string_body> serializer(response);
        bhttp::write_header(stream, serializer, error);
        const std::string& body = response.body();
        asio::write(stream, asio::buffer(body.data(), body.size() / 2), error);
        socket.shutdown(tcp::socket::shutdown_both, error);
        return;
      }
      response.prepare_payload();
      bhttp::write(stream, response, error);
      if (error || !request.keep_alive()) return;
    }
  }

  std::pair<bhttp::response<bhttp::string_body>, ApiFailure> handle(const bhttp::request<bhttp::string_body>& request) {
    ApiRequest received;
    received.target = std::string(request.target());
    received.cursor = query_parameter(received.target, "cursor");
    received.authorization = std::string(request[bhttp::field::authorization]);

    std::unique_lock lock(state_->mutex);
    bhttp::response<bhttp::string_body> response{bhttp::status::ok, request.version()};
    response.keep_alive(request.keep_alive());
    if (!state_->scripted.empty()) {
      received.failure = state_->scripted.front();
      state_->scripted.pop_front();
    }
    const ApiFailure failure = received.failure;
    if (!state_->authorization.empty() && received.authorization != state_->authorization) {
      response.result(bhttp::status::unauthorized);
      response.body() = "missing or wrong Authorization";
      state_->requests.push_back(std::move(received));
      return {std::move(response), ApiFailure::kNone};
    }
    switch (failure) {
      case ApiFailure::kServerError:
        response.result(bhttp::status::internal_server_error);
        response.body() = "injected failure";
        break;
      case ApiFailure::kTooManyRequests:
        response.result(bhttp::status::too_many_requests);
        response.set(bhttp::field::retry_after, state_->retry_after);
        break;
      case ApiFailure::kNotFound:
        response.result(bhttp::status::not_found);
        response.body() = "no such page";
        break;
      case ApiFailure::kNone:
      case ApiFailure::kSlow:
      case ApiFailure::kCut:
        page(received.cursor, response);
        break;
    }
    state_->requests.push_back(std::move(received));
    const auto delay = failure == ApiFailure::kSlow ? state_->slow_delay : state_->page_delay;
    if (delay.count() > 0) state_->changed.wait_for(lock, delay, [this] { return state_->stopping; });
    return {std::move(response), failure};
  }

  // The page that starts at the cursor's offset, in the server's shape (under the lock).
  void page(const std::string& cursor, bhttp::response<bhttp::string_body>& response) const {
    const auto& records = state_->records;
    const std::size_t begin = std::min(offset_of(cursor), records.size());
    const std::size_t end = std::min(begin + state_->page_size, records.size());
    // A last page that links back names "again", a cursor the server reads as the start.
    const bool more = end < records.size() || state_->link_back;
    const std::string next = end < records.size() ? "after:" + std::to_string(end) : "again";
    std::string body;
    if (state_->shape == PageShape::kNdjson) {
      for (std::size_t i = begin; i < end; ++i) body += records[i] + "\n";
      response.set(bhttp::field::content_type, "application/x-ndjson");
    } else {
      std::string array = "[";
      for (std::size_t i = begin; i < end; ++i) array += (i == begin ? "\n  " : ",\n  ") + records[i];
      array += "\n]";
      body = state_->shape == PageShape::kLinkArray
                 ? array
                 : "{\"data\": " + array + ", \"meta\": {\"next_cursor\": " + (more ? "\"" + next + "\"" : "null") +
                       "}}";
      response.set(bhttp::field::content_type, "application/json");
    }
    if (state_->shape != PageShape::kCursorObject && more) {
      // Relative, as many APIs send it: the client resolves it against the page's URL.
      response.set(bhttp::field::link, "</v1/orders?cursor=" + percent_encoded(next) +
                                           ">; rel=\"next\", </v1/orders>; rel=\"first\"");
    }
    response.body() = std::move(body);
  }

  std::shared_ptr<State> state_;
  std::optional<asio::ssl::context> tls_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread accept_thread_;
  struct Connection {
    std::shared_ptr<tcp::socket> socket;
    std::thread thread;
  };
  std::mutex connections_mutex_;
  std::list<std::unique_ptr<Connection>> connections_;
};

TestApiServer::TestApiServer(PageShape shape, std::size_t page_size) : state_(std::make_shared<State>()) {
  state_->shape = shape;
  state_->page_size = page_size;
  server_ = std::make_unique<Server>(state_, nullptr);
}

TestApiServer::TestApiServer(PageShape shape, std::size_t page_size, const TlsIdentity& tls)
    : state_(std::make_shared<State>()) {
  state_->shape = shape;
  state_->page_size = page_size;
  server_ = std::make_unique<Server>(state_, &tls);
}

TestApiServer::~TestApiServer() = default;

std::string TestApiServer::base_url() const { return state_->base_url(); }

void TestApiServer::set_records(std::vector<std::string> records) {
  std::lock_guard lock(state_->mutex);
  state_->records = std::move(records);
}

void TestApiServer::require_authorization(std::string value) {
  std::lock_guard lock(state_->mutex);
  state_->authorization = std::move(value);
}

void TestApiServer::fail_next(ApiFailure failure, int times) {
  std::lock_guard lock(state_->mutex);
  for (int i = 0; i < times; ++i) state_->scripted.push_back(failure);
}

void TestApiServer::set_retry_after(std::string value) {
  std::lock_guard lock(state_->mutex);
  state_->retry_after = std::move(value);
}

void TestApiServer::link_back_to_the_start() {
  std::lock_guard lock(state_->mutex);
  state_->link_back = true;
}

void TestApiServer::set_slow_delay(std::chrono::milliseconds delay) {
  std::lock_guard lock(state_->mutex);
  state_->slow_delay = delay;
}

void TestApiServer::set_page_delay(std::chrono::milliseconds delay) {
  std::lock_guard lock(state_->mutex);
  state_->page_delay = delay;
}

std::vector<ApiRequest> TestApiServer::requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->requests;
}

std::size_t TestApiServer::connections() const {
  std::lock_guard lock(state_->mutex);
  return state_->connections;
}

}  // namespace tidemark::testing
