#include "connectors/http/signature.hpp"

#include <charconv>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace tidemark::connectors::http {

namespace {

constexpr std::string_view kSecretPrefix = "whsec_";
constexpr std::string_view kVersionPrefix = "v1,";

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(written));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  std::string out(3 * text.size() / 4, '\0');
  const int written = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(text.data()),
                                      static_cast<int>(text.size()));
  if (written < 0) return std::nullopt;
  // EVP_DecodeBlock counts the bytes that padding stands for; drop them.
  std::size_t padding = 0;
  if (text.back() == '=') ++padding;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++padding;
  out.resize(static_cast<std::size_t>(written) - padding);
  return out;
}

}  // namespace

std::optional<std::string> decode_secret(std::string_view secret) {
  if (secret.substr(0, kSecretPrefix.size()) != kSecretPrefix) return std::nullopt;
  // The Standard Webhooks libraries accept the base64 with or without its '=' padding.
  std::string text(secret.substr(kSecretPrefix.size()));
  if (text.find('=') == std::string::npos && text.size() % 4 >= 2) text.append(4 - text.size() % 4, '=');
  auto key = base64_decode(text);
  if (!key || key->empty()) return std::nullopt;
  return key;
}

std::string sign(std::string_view key, std::string_view id, std::int64_t timestamp, std::string_view body) {
  std::string content;
  content.reserve(id.size() + body.size() + 24);
  content.append(id).append(".").append(std::to_string(timestamp)).append(".").append(body);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(content.data()),
       content.size(), digest, &digest_size);
  return std::string(kVersionPrefix) +
         base64_encode(std::string_view(reinterpret_cast<const char*>(digest), digest_size));
}

std::string_view to_string(Verification verification) {
  switch (verification) {
    case Verification::kValid: return "valid";
    case Verification::kMissingHeader: return "missing webhook-id, webhook-timestamp or webhook-signature header";
    case Verification::kBadTimestamp: return "webhook-timestamp is not an integer";
    case Verification::kTimestampTooOld: return "webhook-timestamp is too old";
    case Verification::kTimestampTooNew: return "webhook-timestamp is in the future";
    case Verification::kSignatureMismatch: return "no webhook-signature matches";
  }
  return "unknown";
}

Verification verify(std::string_view key, const SignedHeaders& headers, std::string_view body, std::int64_t now,
                    std::chrono::seconds tolerance) {
  if (headers.id.empty() || headers.timestamp.empty() || headers.signature.empty()) {
    return Verification::kMissingHeader;
  }
  std::int64_t timestamp = 0;
  const auto* end = headers.timestamp.data() + headers.timestamp.size();
  const auto [parsed_end, error] = std::from_chars(headers.timestamp.data(), end, timestamp);
  if (error != std::errc{} || parsed_end != end) return Verification::kBadTimestamp;
  if (timestamp < now - tolerance.count()) return Verification::kTimestampTooOld;
  if (timestamp > now + tolerance.count()) return Verification::kTimestampTooNew;

  const std::string expected = sign(key, headers.id, timestamp, body);
  std::string_view rest = headers.signature;
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    const std::string_view candidate = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    if (candidate.size() == expected.size() && CRYPTO_memcmp(candidate.data(), expected.data(), expected.size()) == 0) {
      return Verification::kValid;
    }
  }
  return Verification::kSignatureMismatch;
}

}  // namespace tidemark::connectors::http
