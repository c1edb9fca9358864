#include "connectors/http/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>

#include "connectors/http/options_error.hpp"

namespace tidemark::connectors::http {

namespace asio = boost::asio;

namespace {

// X509 verification results (X509_V_ERR_*) as error codes, so that a failed handshake
// reports why the certificate was refused through the same path as any other I/O error.
class VerifyCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "tls-verify"; }
  std::string message(int value) const override {
    return std::string("certificate verify failed: ") + X509_verify_cert_error_string(value);
  }
};

const VerifyCategory& verify_category() {
  static const VerifyCategory category;
  return category;
}

// The newest OpenSSL error on this thread, for a message; empty when there is none.
std::string last_openssl_error() {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return std::string(": ") + text;
}

}  // namespace

asio::ssl::context make_client_tls_context(const std::string& ca_file) {
  asio::ssl::context context(asio::ssl::context::tls_client);
  SSL_CTX* native = context.native_handle();
  if (SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION) != 1) {
    throw OptionsError("cannot require TLS 1.2" + last_openssl_error());
  }
  context.set_verify_mode(asio::ssl::verify_peer);
  if (ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(native) != 1) {
      throw OptionsError("cannot load the system's trusted certificates" + last_openssl_error());
    }
  } else if (SSL_CTX_load_verify_locations(native, ca_file.c_str(), nullptr) != 1) {
    throw OptionsError("ca_file '" + ca_file + "' holds no PEM certificate that can be read" +
                       last_openssl_error());
  }
  return context;
}

boost::system::error_code prepare_client_handshake(SSL* ssl, const std::string& host) {
  boost::system::error_code not_address;
  asio::ip::make_address(host, not_address);
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  bool ok = false;
  if (!not_address) {
    ok = X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;
  } else {
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    ok = SSL_set1_host(ssl, host.c_str()) == 1 && SSL_set_tlsext_host_name(ssl, host.c_str()) == 1;
  }
  if (ok) return {};
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return asio::error::invalid_argument;
  return {static_cast<int>(code), asio::error::get_ssl_category()};
}

boost::system::error_code handshake_error(const SSL* ssl, const boost::system::error_code& error) {
  const long result = SSL_get_verify_result(ssl);
  if (result != X509_V_OK) return {static_cast<int>(result), verify_category()};
  return error;
}

}  // namespace tidemark::connectors::http
