#pragma once
// Standard Webhooks signing (https://www.standardwebhooks.com): the relay signs what it
// sends, the serve API verifies what it receives. Pure functions over values.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tidemark::connectors::http {

// The key bytes of a "whsec_<base64>" secret, padded or not (as the Standard Webhooks
// libraries accept it); nullopt when the text is not such a secret.
std::optional<std::string> decode_secret(std::string_view secret);

// "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)).
std::string sign(std::string_view key, std::string_view id, std::int64_t timestamp, std::string_view body);

// The three Standard Webhooks headers of a request, as received.
struct SignedHeaders {
  std::string_view id;         // webhook-id
  std::string_view timestamp;  // webhook-timestamp, unix seconds
  std::string_view signature;  // webhook-signature: one or more space-separated "v1,<base64>"
};

enum class Verification {
  kValid,
  kMissingHeader,      // a header is absent or empty
  kBadTimestamp,       // not an integer
  kTimestampTooOld,    // outside the tolerance (replay protection)
  kTimestampTooNew,
  kSignatureMismatch,  // no v1 signature matches
};

std::string_view to_string(Verification verification);

inline constexpr std::chrono::seconds kDefaultTolerance{5 * 60};

// Valid when any v1 signature of the header matches (several are sent while a secret is
// rotated), compared in constant time, and the timestamp is within `tolerance` of `now`.
Verification verify(std::string_view key, const SignedHeaders& headers, std::string_view body, std::int64_t now,
                    std::chrono::seconds tolerance = kDefaultTolerance);

}  // namespace tidemark::connectors::http
