#pragma once
// A real paged JSON API for the HTTP source's tests: an HTTP server on 127.0.0.1 (port 0) on
// its own threads that serves a list of records page by page, in the three shapes the source
// reads (an object with a next cursor, a JSON array with a Link header, NDJSON with a Link
// header), and fails in the ways APIs fail (429 with Retry-After, 500, 4xx, slow answers,
// connections cut mid-answer). The records can change between runs. Given a certificate it
// speaks HTTPS instead.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/test_receiver.hpp"

namespace tidemark::testing {

enum class PageShape {
  kCursorObject,  // {"data":[…],"meta":{"next_cursor":"after:N"|null}}: records: data, next: {json: meta.next_cursor}
  kLinkArray,     // […] with Link: <…?cursor=after%3AN>; rel="next": next: {link_header: next}
  kNdjson,        // one record per line, with the same Link header (format: ndjson)
};

enum class ApiFailure {
  kNone,
  kServerError,      // 500
  kTooManyRequests,  // 429 with Retry-After (set_retry_after)
  kNotFound,         // 404
  kSlow,             // the page, but only after slow_delay (past the client's timeout)
  kCut,              // headers and half the body, then the connection closes
};

struct ApiRequest {
  std::string target;         // as sent: "/v1/orders?cursor=after%3A3"
  std::string cursor;         // the cursor query parameter, percent-decoded ("" when absent)
  std::string authorization;  // the Authorization header as received
  ApiFailure failure = ApiFailure::kNone;
};

class TestApiServer {
 public:
  explicit TestApiServer(PageShape shape, std::size_t page_size);
  TestApiServer(PageShape shape, std::size_t page_size, const TlsIdentity& tls);
  ~TestApiServer();
  TestApiServer(const TestApiServer&) = delete;
  TestApiServer& operator=(const TestApiServer&) = delete;

  // http(s)://127.0.0.1:PORT/v1/orders: the page of a cursor is …/v1/orders?cursor=CURSOR.
  std::string base_url() const;
  // The records served (JSON object texts), in order; replacing them changes the next pages.
  void set_records(std::vector<std::string> records);
  // Answers 401 to a request without `Authorization: <value>` ("" requires nothing).
  void require_authorization(std::string value);
  // Failure choice per request: scripted ones first, in order.
  void fail_next(ApiFailure failure, int times = 1);
  void set_retry_after(std::string value);
  void set_slow_delay(std::chrono::milliseconds delay);
  // Every page from now on is answered after `delay` (a slow but working API): a run then
  // lasts at least pages × delay, however fast the machine.
  void set_page_delay(std::chrono::milliseconds delay);
  // From now on the last page names a next page, the first one again (cursor "again"): a
  // paging cycle, as a broken API makes.
  void link_back_to_the_start();

  std::vector<ApiRequest> requests() const;
  // Connections accepted so far (a kept-alive client uses one for many requests).
  std::size_t connections() const;

 private:
  struct State;
  class Server;
  std::shared_ptr<State> state_;
  std::unique_ptr<Server> server_;
};

}  // namespace tidemark::testing
