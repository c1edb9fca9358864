#pragma once
// Certificates made in the test with OpenSSL: a certificate authority of its own and the
// server certificates it issues, as PEM files in a temporary folder, so that TLS tests need
// neither the system store nor the openssl command.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/run_helpers.hpp"

namespace tidemark::testing {

struct ServerCertificate {
  std::filesystem::path cert_file;  // PEM: the leaf only, as a server that omits its chain sends it
  std::filesystem::path key_file;   // PEM, unencrypted
};

class TestCertificateAuthority {
 public:
  explicit TestCertificateAuthority(const std::string& common_name = "Tidemark Test CA");
  ~TestCertificateAuthority();
  TestCertificateAuthority(const TestCertificateAuthority&) = delete;
  TestCertificateAuthority& operator=(const TestCertificateAuthority&) = delete;

  // The CA certificate (PEM): what a client trusts.
  const std::filesystem::path& ca_file() const { return ca_file_; }

  // A server certificate naming `dns_names` and `ip_addresses` (subjectAltName), signed by
  // this CA and valid from an hour ago for a day.
  ServerCertificate issue(const std::vector<std::string>& dns_names, const std::vector<std::string>& ip_addresses);

 private:
  struct Keys;
  TempDir folder_;
  std::unique_ptr<Keys> keys_;
  std::filesystem::path ca_file_;
  long next_serial_ = 2;
};

}  // namespace tidemark::testing
