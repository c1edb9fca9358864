#include "tests/support/test_certificates.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <stdexcept>

namespace tidemark::testing {

namespace {

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertFree {
  void operator()(X509* cert) const { X509_free(cert); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test certificate: ") + what + " failed");
}

Key new_key() {
  Key key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EC key generation");
  return key;
}

void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
  check(extension != nullptr, value.c_str());
  check(X509_add_ext(cert, extension, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(extension);
}

// A certificate for `key` named `common_name`, not yet signed; `issuer` null: self-issued.
Cert new_cert(EVP_PKEY* key, const std::string& common_name, long serial, X509* issuer) {
  Cert cert(X509_new());
  check(cert != nullptr, "X509_new");
  check(X509_set_version(cert.get(), 2) == 1, "X509_set_version");
  check(ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial) == 1, "serial");
  check(X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) != nullptr, "notBefore");
  check(X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600) != nullptr, "notAfter");
  check(X509_set_pubkey(cert.get(), key) == 1, "X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(cert.get());
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0) == 1,
        "subject");
  check(X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name) == 1, "issuer");
  return cert;
}

template <class Write>
void write_pem(const std::filesystem::path& path, Write write) {
  FILE* file = std::fopen(path.c_str(), "w");
  check(file != nullptr, "opening a PEM file");
  const bool ok = write(file) == 1;
  std::fclose(file);
  check(ok, "writing a PEM file");
}

}  // namespace

struct TestCertificateAuthority::Keys {
  Key key;
  Cert cert;
};

TestCertificateAuthority::TestCertificateAuthority(const std::string& common_name) : keys_(std::make_unique<Keys>()) {
  keys_->key = new_key();
  keys_->cert = new_cert(keys_->key.get(), common_name, 1, nullptr);
  X509* cert = keys_->cert.get();
  add_extension(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  add_extension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  add_extension(cert, cert, NID_subject_key_identifier, "hash");
  check(X509_sign(cert, keys_->key.get(), EVP_sha256()) > 0, "signing the CA");
  ca_file_ = folder_.path() / "ca.pem";
  write_pem(ca_file_, [&](FILE* file) { return PEM_write_X509(file, cert); });
}

TestCertificateAuthority::~TestCertificateAuthority() = default;

ServerCertificate TestCertificateAuthority::issue(const std::vector<std::string>& dns_names,
                                                  const std::vector<std::string>& ip_addresses) {
  const long serial = next_serial_++;
  std::string names;
  for (const auto& name : dns_names) names += (names.empty() ? "DNS:" : ",DNS:") + name;
  for (const auto& address : ip_addresses) names += (names.empty() ? "IP:" : ",IP:") + address;
  const Key key = new_key();
  const Cert cert = new_cert(key.get(), dns_names.empty() ? ip_addresses.at(0) : dns_names.front(), serial,
                             keys_->cert.get());
  add_extension(cert.get(), keys_->cert.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_extension(cert.get(), keys_->cert.get(), NID_ext_key_usage, "serverAuth");
  add_extension(cert.get(), keys_->cert.get(), NID_authority_key_identifier, "keyid");
  add_extension(cert.get(), keys_->cert.get(), NID_subject_alt_name, names);
  check(X509_sign(cert.get(), keys_->key.get(), EVP_sha256()) > 0, "signing a server certificate");

  const std::string stem = "server-" + std::to_string(serial);
  ServerCertificate out{folder_.path() / (stem + ".pem"), folder_.path() / (stem + "-key.pem")};
  write_pem(out.cert_file, [&](FILE* file) { return PEM_write_X509(file, cert.get()); });
  write_pem(out.key_file, [&](FILE* file) {
    return PEM_write_PrivateKey(file, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  return out;
}

}  // namespace tidemark::testing
