// libFuzzer target: what the HTTP source parses from an API and from its own checkpoints — a
// Link header, a stored position, a JSON page (records at a dotted path, a next cursor) and
// an NDJSON page — with the properties the source relies on: every record is a slice of the
// body; a parsed position prints back to a text that parses to it again; no input crashes,
// hangs or recurses without bound. Each record is decoded as the source decodes it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "connectors/file/jsonl_decoder.hpp"
#include "connectors/http_api/link_header.hpp"
#include "connectors/http_api/page.hpp"
#include "connectors/http_api/position.hpp"

namespace {

using namespace tidemark::connectors::http_api;

void check_records(std::string_view body, const std::variant<Page, std::string>& parsed) {
  const auto* page = std::get_if<Page>(&parsed);
  if (page == nullptr) return;
  for (const auto& record : page->records) {
    // A slice of the body, at the offset it names.
    if (record.raw.data() != body.data() + record.offset || record.offset + record.raw.size() > body.size()) {
      std::abort();
    }
    tidemark::connectors::file::decode_jsonl_line(record.raw, {});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  link_target(input, "next");
  if (const auto position = parse_position(input)) {
    if (parse_position(to_text(*position)) != position) std::abort();
  }
  check_records(input, parse_json_page(input, {}, std::nullopt));
  check_records(input, parse_json_page(input, {"data"}, JsonPath{"meta", "next"}));
  check_records(input, parse_ndjson_page(input));
  expand_url("https://a/b?c={checkpoint}", input);
  return 0;
}
