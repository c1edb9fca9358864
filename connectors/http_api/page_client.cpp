#include "connectors/http_api/page_client.hpp"

#include <optional>
#include <variant>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>

#include "connectors/http/tls.hpp"
#include "pipeline/core/error_text.hpp"

namespace tidemark::connectors::http_api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

RequestUrl split_url(const std::string& url) {
  const std::string shown = pipeline::redact_urls(url);
  const auto parsed = boost::urls::parse_uri(url);
  if (!parsed) throw InvalidUrl("'" + shown + "' is not a valid URL");
  if (parsed->scheme() != "http" && parsed->scheme() != "https") {
    throw InvalidUrl("'" + shown + "': only http:// and https:// URLs are supported");
  }
  RequestUrl out;
  out.origin.tls = parsed->scheme() == "https";
  out.origin.host = parsed->host();
  if (out.origin.host.empty()) throw InvalidUrl("'" + shown + "' has no host");
  out.origin.port = parsed->has_port() ? std::string(parsed->port()) : out.origin.tls ? "443" : "80";
  out.target = std::string(parsed->encoded_target());
  if (out.target.empty()) out.target = "/";
  return out;
}

namespace {

using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using Stream = std::variant<beast::tcp_stream, TlsStream>;

bool closed_by_peer(const beast::error_code& error) {
  return error == bhttp::error::end_of_stream || error == asio::error::eof ||
         error == asio::error::connection_reset || error == asio::error::broken_pipe ||
         error == asio::ssl::error::stream_truncated;
}

}  // namespace

// Runs each exchange as a coroutine on a private io_context, driven by the calling thread
// (Source::read is a blocking call the run posts to its thread pool).
class PageClient::Impl {
 public:
  Impl(Origin origin, const std::string& ca_file, ClientTimeouts timeouts, std::size_t max_body_bytes)
      : origin_(std::move(origin)), timeouts_(timeouts), max_body_bytes_(max_body_bytes) {
    if (origin_.tls) {
      tls_.emplace(http::make_client_tls_context(ca_file));
    }
  }

  PageResponse get(const std::string& target, const std::vector<std::pair<std::string, std::string>>& headers,
                   const std::string& what) {
    bhttp::request<bhttp::empty_body> request{bhttp::verb::get, target, 11};
    const bool default_port = origin_.port == (origin_.tls ? "443" : "80");
    request.set(bhttp::field::host, default_port ? origin_.host : origin_.host + ":" + origin_.port);
    request.set(bhttp::field::user_agent, "tidemark-source");
    request.set(bhttp::field::accept, "application/json, application/x-ndjson");
    for (const auto& [name, value] : headers) request.set(name, value);
    request.keep_alive(true);

    const bool reused = connection_ != nullptr;
    Outcome outcome = exchange(request);
    // A kept-alive connection the server closed meanwhile: the request never arrived.
    if (reused && outcome.error && outcome.nothing_received && closed_by_peer(outcome.error)) {
      connection_.reset();
      outcome = exchange(request);
    }
    if (outcome.too_large) {
      connection_.reset();
      throw std::length_error("GET " + what + ": the answer is larger than " + std::to_string(max_body_bytes_) +
                              " bytes");
    }
    if (outcome.error) {
      connection_.reset();
      const bool connecting = outcome.stage == "connect" || outcome.stage == "TLS handshake";
      if (outcome.error == beast::error::timeout) {
        const auto limit = connecting ? timeouts_.connect : timeouts_.request;
        throw TransportError("timed out (" + std::to_string(limit.count()) + " ms) during " +
                             std::string(outcome.stage) + " of GET " + what);
      }
      throw TransportError(std::string(outcome.stage) + " of GET " + what + ": " + outcome.error.message());
    }
    if (!outcome.keep_alive) connection_.reset();
    return std::move(outcome.response);
  }

  void pause(std::chrono::milliseconds delay) {
    if (delay.count() <= 0) return;
    asio::steady_timer timer(io_, delay);
    timer.wait();
  }

 private:
  struct Connection {
    Connection(asio::io_context& io, asio::ssl::context* tls)
        : stream(tls ? Stream(std::in_place_type<TlsStream>, io, *tls)
                     : Stream(std::in_place_type<beast::tcp_stream>, io)) {}
    beast::tcp_stream& tcp() {
      return std::visit([](auto& s) -> beast::tcp_stream& { return beast::get_lowest_layer(s); }, stream);
    }
    Stream stream;
    beast::flat_buffer buffer;
  };

  struct Outcome {
    beast::error_code error;
    std::string_view stage;
    bool nothing_received = true;
    bool keep_alive = false;
    bool too_large = false;  // the body passed max_body_bytes_
    PageResponse response;
  };

  Outcome exchange(bhttp::request<bhttp::empty_body>& request) {
    Outcome outcome;
    io_.restart();
    // An exception inside the exchange (not an I/O error: those are in outcome) leaves run().
    asio::co_spawn(io_, run(request, outcome), [](std::exception_ptr failure) {
      if (failure) std::rethrow_exception(failure);
    });
    io_.run();
    return outcome;
  }

  asio::awaitable<void> run(bhttp::request<bhttp::empty_body>& request, Outcome& outcome) {
    auto& error = outcome.error;
    if (!connection_) {
      connection_ = std::make_unique<Connection>(io_, tls_ ? &*tls_ : nullptr);
      tcp::resolver resolver(io_);
      const auto endpoints =
          co_await resolver.async_resolve(origin_.host, origin_.port, asio::redirect_error(asio::use_awaitable, error));
      if (error) {
        outcome.stage = "resolve";
        co_return;
      }
      connection_->tcp().expires_after(timeouts_.connect);
      co_await connection_->tcp().async_connect(endpoints, asio::redirect_error(asio::use_awaitable, error));
      if (error) {
        outcome.stage = "connect";
        co_return;
      }
      connection_->tcp().socket().set_option(tcp::no_delay(true), error);
      if (auto* tls = std::get_if<TlsStream>(&connection_->stream)) {
        error = http::prepare_client_handshake(tls->native_handle(), origin_.host);
        if (!error) {
          co_await tls->async_handshake(asio::ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, error));
        }
        if (error) {
          error = http::handshake_error(tls->native_handle(), error);
          outcome.stage = "TLS handshake";
          co_return;
        }
      }
    }
    // One deadline for the whole request and answer: a server that trickles bytes cannot
    // hold the run past it.
    connection_->tcp().expires_after(timeouts_.request);
    co_await std::visit(
        [&](auto& stream) { return bhttp::async_write(stream, request, asio::redirect_error(asio::use_awaitable, error)); },
        connection_->stream);
    if (error) {
      outcome.stage = "send";
      co_return;
    }
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(max_body_bytes_);
    co_await std::visit(
        [&](auto& stream) {
          return bhttp::async_read(stream, connection_->buffer, parser, asio::redirect_error(asio::use_awaitable, error));
        },
        connection_->stream);
    if (error) {
      outcome.stage = "receive";
      outcome.nothing_received = !parser.got_some();
      outcome.too_large = error == bhttp::error::body_limit;
      co_return;
    }
    outcome.nothing_received = false;
    auto& response = parser.get();
    outcome.keep_alive = response.keep_alive();
    outcome.response.status = static_cast<int>(response.result_int());
    outcome.response.retry_after = std::string(response[bhttp::field::retry_after]);
    for (const auto& field : response) {
      if (beast::iequals(field.name_string(), "link")) {
        if (!outcome.response.link.empty()) outcome.response.link += ", ";
        outcome.response.link += std::string(field.value());
      }
    }
    outcome.response.body = std::move(response.body());
  }

  Origin origin_;
  ClientTimeouts timeouts_;
  std::size_t max_body_bytes_;
  std::optional<asio::ssl::context> tls_;
  asio::io_context io_;
  std::unique_ptr<Connection> connection_;  // the kept-alive connection, after io_ so it closes first
};

PageClient::PageClient(Origin origin, const std::string& ca_file, ClientTimeouts timeouts, std::size_t max_body_bytes)
    : impl_(std::make_unique<Impl>(std::move(origin), ca_file, timeouts, max_body_bytes)) {}

PageClient::~PageClient() = default;

PageResponse PageClient::get(const std::string& target,
                             const std::vector<std::pair<std::string, std::string>>& headers,
                             const std::string& what) {
  return impl_->get(target, headers, what);
}

void PageClient::pause(std::chrono::milliseconds delay) { impl_->pause(delay); }

}  // namespace tidemark::connectors::http_api
