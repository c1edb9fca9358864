#pragma once
// Percent-encoding, in one place: a URL's query value, a libpq URI's parameter, a NATS subject
// token and an id in an HTTP header each keep their own set of bytes as they are and write
// every other byte as %XX (upper-case hex), so that the text is one token of its carrier
// whatever it holds. Pure; no third-party includes.
#include <string>
#include <string_view>

namespace tidemark::pipeline {

// RFC 3986's unreserved characters: A-Z a-z 0-9 - . _ ~
bool is_url_unreserved(unsigned char byte);

// `text` with every byte that `keep` refuses written as %XX; '%' itself must be refused by
// `keep` for the text to decode back.
std::string percent_encode(std::string_view text, bool (*keep)(unsigned char byte));

}  // namespace tidemark::pipeline
