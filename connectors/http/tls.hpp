#pragma once
// TLS for Tidemark's outbound HTTP clients (webhook destinations now, HTTP sources later):
// the peer's chain is always verified, against the system store or a given PEM bundle, and
// so is its name. There is deliberately no way to turn verification off.
#include <string>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>

namespace tidemark::connectors::http {

// A client context: TLS 1.2 or later, peer verification required, trusting the PEM bundle
// `ca_file` or, when it is empty, the system store (SSL_CTX_set_default_verify_paths, so
// SSL_CERT_FILE and SSL_CERT_DIR apply). Build it once per destination and share it between
// that destination's connections. Throws OptionsError when the trust store cannot be
// loaded.
boost::asio::ssl::context make_client_tls_context(const std::string& ca_file);

// Readies the SSL object of a connection for a client handshake with `host` (a DNS name or
// an IP literal, as in the URL): sends SNI for a DNS name (RFC 6066 forbids it for an
// address) and makes the handshake fail unless the certificate names that host or address.
boost::system::error_code prepare_client_handshake(SSL* ssl, const std::string& host);

// The error to report for a failed handshake: the certificate verification result when
// verification is what failed ("certificate verify failed: hostname mismatch"), since
// OpenSSL's own error says only "certificate verify failed"; else `error` itself.
boost::system::error_code handshake_error(const SSL* ssl, const boost::system::error_code& error);

}  // namespace tidemark::connectors::http
