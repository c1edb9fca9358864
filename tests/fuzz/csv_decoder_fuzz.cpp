// libFuzzer target: the CSV decoder (RFC 4180 framing and header matching) and the
// validator over whatever it decodes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "connectors/file/record_stream.hpp"
#include "tests/fuzz/decoder_properties.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  tidemark::fuzz::check_decoded(input,
                                tidemark::connectors::file::decode_text(tidemark::connectors::file::Format::kCsv,
                                                                        input, "fuzz.csv"));
  return 0;
}
