#include "connectors/http_api/http_source.hpp"

#include <cstdlib>
#include <random>
#include <string>
#include <unordered_set>
#include <variant>

#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include "connectors/file/jsonl_decoder.hpp"
#include "connectors/http/options_error.hpp"
#include "connectors/http_api/link_header.hpp"
#include "connectors/http_api/page_client.hpp"
#include "connectors/http_api/position.hpp"
#include "pipeline/core/backoff.hpp"
#include "pipeline/core/retry_after.hpp"
#include "pipeline/core/error_text.hpp"
#include "pipeline/core/sink.hpp"
#include "pipeline/core/utf8.hpp"

namespace tidemark::connectors::http_api {

namespace {

using Clock = std::chrono::steady_clock;

// An answer's body in an error message: enough to see what the API said.
constexpr std::size_t kErrorBodyExcerpt = 200;

class HttpSource final : public pipeline::Source {
 public:
  HttpSource(HttpSourceOptions options, std::shared_ptr<const pipeline::RecordLayout> layout)
      : options_(std::move(options)),
        layout_(std::move(layout)),
        identity_(pipeline::redact_urls(options_.url)),
        rng_(std::random_device{}()) {
    if (!options_.auth_header.empty()) {
      const char* value = std::getenv(options_.auth_value_env.c_str());
      if (value == nullptr || *value == '\0') {
        throw pipeline::SourceError("environment variable " + options_.auth_value_env +
                                    " (source.auth.value_env) is not set: set it to the value of the " +
                                    options_.auth_header + " header");
      }
      auth_value_ = value;
    }
    try {
      origin_ = split_url(expand_url(options_.url, "")).origin;
      client_ = std::make_unique<PageClient>(origin_, options_.ca_file,
                                             ClientTimeouts{options_.connect_timeout, options_.request_timeout},
                                             options_.max_page_bytes);
    } catch (const InvalidUrl& error) {
      throw pipeline::SourceError(std::string("source.url: ") + error.what());
    } catch (const http::OptionsError& error) {  // the trust store (source.ca_file) does not load
      throw pipeline::SourceError(std::string("source.url: ") + error.what());
    }
  }

  const std::string& identity() const override { return identity_; }

  void seek(const pipeline::Position& from) override {
    const auto parsed = parse_position(from.text);
    if (!parsed) {
      throw pipeline::SourceError("checkpoint '" + from.text + "' is not a position of the http source " + identity_ +
                                  " (expected {\"page\":N,\"cursor\":\"…\",\"consumed\":N})");
    }
    position_ = *parsed;
    page_.reset();
    visited_.clear();
  }

  std::size_t read(std::vector<pipeline::DecodedRecord>& out, std::size_t max_records,
                   std::size_t max_bytes) override {
    std::size_t appended = 0;
    std::size_t bytes = 0;
    while (appended < max_records) {
      if (!page_) load_page();
      const auto& records = page_->parsed.records;
      if (position_.consumed < records.size()) {
        const RecordText& text = records[position_.consumed];
        if (appended > 0 && bytes + text.raw.size() > max_bytes) break;
        pipeline::SourcePosition where;
        where.file = "page " + std::to_string(position_.page) + " of " + identity_;
        where.line = text.line;
        where.offset = text.offset;
        where.end_offset = text.offset + text.raw.size();
        out.push_back(file::decode_jsonl_line(text.raw, std::move(where), *layout_));
        bytes += text.raw.size();
        ++appended;
        ++position_.consumed;
        continue;
      }
      // The page is done: on to the next one, unless it names a page this read has been to
      // (itself, or an earlier one: a cycle would read the same records for ever).
      visited_.insert(position_.cursor);
      if (!page_->next || visited_.contains(*page_->next)) break;
      position_ = PagePosition{position_.page + 1, *page_->next, 0};
      page_.reset();
    }
    return appended;
  }

  pipeline::Position position() const override { return {to_text(position_)}; }

  bool precedes(const pipeline::Position& earlier, const pipeline::Position& later) const override {
    const auto a = parse_position(earlier.text);
    const auto b = parse_position(later.text);
    if (!a || !b) {
      throw pipeline::SourceError("'" + (a ? later.text : earlier.text) + "' is not a position of the http source " +
                                  identity_);
    }
    return http_api::precedes(*a, *b);
  }

  std::string_view format() const override { return kRecordFormat; }

 private:
  struct LoadedPage {
    std::string body;  // what parsed's record texts point into
    Page parsed;
    std::optional<std::string> next;  // the cursor (or, with link_header, the URL) of the next page
  };

  // The URL of the page the position names: the template with its cursor, or with
  // link_header a later page's own URL.
  std::string page_url() const {
    if (options_.paging == Paging::kLinkHeader && !position_.cursor.empty()) return position_.cursor;
    return expand_url(options_.url, position_.cursor);
  }

  void load_page() {
    const std::string url = page_url();
    const std::string shown = pipeline::redact_urls(url);
    RequestUrl request;
    try {
      request = split_url(url);
    } catch (const InvalidUrl& error) {
      throw pipeline::SourceError(std::string("page ") + std::to_string(position_.page) + ": " + error.what());
    }
    // The auth header goes to the configured origin only, never where a Link points elsewhere.
    if (request.origin != origin_) {
      throw pipeline::SourceError("the next page's URL " + shown + " is not on the origin of source.url " + identity_ +
                                  " (scheme, host and port must be the same)");
    }
    auto page = std::make_unique<LoadedPage>();
    PageResponse response = fetch(request.target, shown);
    page->body = std::move(response.body);
    auto parsed = options_.format == PageFormat::kNdjson
                      ? parse_ndjson_page(page->body)
                      : parse_json_page(page->body, options_.records,
                                        options_.paging == Paging::kJsonField ? std::optional(options_.next_json)
                                                                              : std::nullopt);
    if (auto* error = std::get_if<std::string>(&parsed)) {
      throw pipeline::SourceError("GET " + shown + " (page " + std::to_string(position_.page) + "): " + *error);
    }
    page->parsed = std::move(std::get<Page>(parsed));
    if (options_.paging == Paging::kJsonField) {
      page->next = page->parsed.next_cursor;
    } else if (options_.paging == Paging::kLinkHeader) {
      if (auto target = link_target(response.link, options_.next_relation)) {
        page->next = resolve(url, *target, shown);
      }
    }
    if (page->next && !pipeline::is_storable_text(*page->next)) {
      throw pipeline::SourceError("GET " + shown + ": the next page's cursor is not valid UTF-8");
    }
    page_ = std::move(page);
  }

  // A Link target relative to the page's URL (RFC 3986 §5), as an absolute URL.
  static std::string resolve(const std::string& base, const std::string& target, const std::string& shown) {
    const auto base_url = boost::urls::parse_uri(base);
    const auto reference = boost::urls::parse_uri_reference(target);
    if (!base_url || !reference) {
      throw pipeline::SourceError("GET " + shown + ": the Link header's next target '" +
                                  pipeline::redact_urls(target) + "' is not a URL");
    }
    boost::urls::url resolved;
    const auto result = boost::urls::resolve(*base_url, *reference, resolved);
    if (!result) {
      throw pipeline::SourceError("GET " + shown + ": cannot resolve the Link header's next target");
    }
    return std::string(resolved.buffer());
  }

  // One page, with the retries the status asks for. 2xx: the page; 408, 429, 5xx and
  // transport failures: again after Retry-After or a backoff, at most max_attempts times;
  // any other status fails the run, naming the URL (redacted) and the status.
  PageResponse fetch(const std::string& target, const std::string& shown) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!options_.auth_header.empty()) headers.emplace_back(options_.auth_header, auth_value_);
    std::string last_error;
    for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
      pace();
      std::optional<std::chrono::milliseconds> wait;
      try {
        PageResponse response = client_->get(target, headers, shown);
        const int status = response.status;
        if (status >= 200 && status < 300) return response;
        last_error = "HTTP " + std::to_string(status);
        if (!response.body.empty()) {
          last_error += ": " + pipeline::bounded_error_text(response.body, kErrorBodyExcerpt);
        }
        if (status != 408 && status != 429 && status < 500) {
          throw pipeline::SourceError("GET " + shown + " answered " + last_error +
                                      (status >= 300 && status < 400 ? " (redirects are not followed; fix source.url)"
                                                                     : ""));
        }
        if (const auto after = pipeline::parse_retry_after(response.retry_after, pipeline::kMaxRetryAfter)) {
          wait = *after;
        }
      } catch (const TransportError& error) {
        last_error = error.what();
      } catch (const std::length_error& error) {
        throw pipeline::SourceError(error.what());
      }
      if (attempt == options_.max_attempts) break;
      client_->pause(wait ? *wait : pipeline::backoff_delay(options_.base_delay, options_.max_delay, attempt, rng_));
    }
    throw pipeline::SourceError("GET " + shown + " failed " + std::to_string(options_.max_attempts) +
                                " times; the last: " + last_error);
  }

  // max_rps: requests, retries included, start at least 1/max_rps apart.
  void pace() {
    if (!options_.max_rps) return;
    const auto now = Clock::now();
    if (last_request_ && now < *last_request_ + interval()) {
      // Rounded up: a wait cut short by truncation would let requests start too close.
      client_->pause(std::chrono::ceil<std::chrono::milliseconds>(*last_request_ + interval() - now));
    }
    last_request_ = Clock::now();
  }
  Clock::duration interval() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / *options_.max_rps));
  }

  HttpSourceOptions options_;
  std::shared_ptr<const pipeline::RecordLayout> layout_;
  std::string identity_;
  std::string auth_value_;
  Origin origin_;
  std::unique_ptr<PageClient> client_;
  PagePosition position_;
  std::unique_ptr<LoadedPage> page_;  // the page position_ is on, once fetched
  std::unordered_set<std::string> visited_;  // the cursors of the pages read since seek
  std::mt19937_64 rng_;
  std::optional<Clock::time_point> last_request_;
};

}  // namespace

std::unique_ptr<pipeline::Source> open_http_source(const HttpSourceOptions& options,
                                                   std::shared_ptr<const pipeline::RecordLayout> layout) {
  return std::make_unique<HttpSource>(options, std::move(layout));
}

}  // namespace tidemark::connectors::http_api
