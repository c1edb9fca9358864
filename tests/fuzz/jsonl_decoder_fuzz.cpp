// libFuzzer target: the JSON Lines decoder (line framing, JSON parsing, field kinds) and the
// validator over whatever it decodes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "connectors/file/record_stream.hpp"
#include "tests/fuzz/decoder_properties.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  tidemark::fuzz::check_decoded(input,
                                tidemark::connectors::file::decode_text(tidemark::connectors::file::Format::kJsonl,
                                                                        input, "fuzz.jsonl"));
  return 0;
}
