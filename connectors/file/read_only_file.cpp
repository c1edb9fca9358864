#include "connectors/file/read_only_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include <openssl/evp.h>

#include "pipeline/core/source.hpp"
#include "pipeline/core/utf8.hpp"

namespace tidemark::connectors::file {

namespace {

using pipeline::SourceError;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw SourceError("file source: cannot " + what + " '" + path.string() + "': " + std::strerror(errno));
}

}  // namespace

ReadOnlyFile::ReadOnlyFile(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) fail(path, "open");
  struct stat status {};
  if (::fstat(fd_, &status) != 0) {
    const int saved = errno;
    ::close(fd_);
    errno = saved;
    fail(path, "stat");
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd_);
    throw SourceError("file source: '" + path.string() + "' is not a regular file (a FIFO, a socket or a device); "
                      "only regular files are read");
  }
  device_ = static_cast<std::uint64_t>(status.st_dev);
  inode_ = static_cast<std::uint64_t>(status.st_ino);
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      device_(other.device_),
      inode_(other.inode_) {}

ReadOnlyFile& ReadOnlyFile::operator=(ReadOnlyFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    device_ = other.device_;
    inode_ = other.inode_;
  }
  return *this;
}

std::uint64_t ReadOnlyFile::size() const {
  struct stat status {};
  if (::fstat(fd_, &status) != 0) fail(path_, "stat");
  return static_cast<std::uint64_t>(status.st_size);
}

std::size_t ReadOnlyFile::read(char* buffer, std::size_t size) {
  std::size_t total = 0;
  while (total < size) {
    const ssize_t got = ::read(fd_, buffer + total, size - total);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path_, "read");
    if (got == 0) break;
    total += static_cast<std::size_t>(got);
  }
  return total;
}

void ReadOnlyFile::seek(std::uint64_t offset) {
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) fail(path_, "seek in");
}

std::size_t ReadOnlyFile::read_at(std::uint64_t offset, char* buffer, std::size_t size) const {
  std::size_t total = 0;
  while (total < size) {
    const ssize_t got = ::pread(fd_, buffer + total, size - total, static_cast<off_t>(offset + total));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(path_, "read");
    if (got == 0) break;
    total += static_cast<std::size_t>(got);
  }
  return total;
}

std::string ReadOnlyFile::fingerprint(std::uint64_t bytes) const {
  std::array<char, 2 * kFingerprintBytes> buffer{};
  const std::size_t head = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, kFingerprintBytes));
  const std::uint64_t tail_start = bytes - head;
  std::size_t got = read_at(0, buffer.data(), head);
  got += read_at(tail_start, buffer.data() + got, head);
  // The length is hashed too: a shorter file never matches a longer read, even if both ends agree.
  const std::string length = std::to_string(bytes);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int digest_size = 0;
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  const bool hashed = context != nullptr && EVP_DigestInit_ex(context, EVP_sha256(), nullptr) == 1 &&
                      EVP_DigestUpdate(context, buffer.data(), got) == 1 &&
                      EVP_DigestUpdate(context, length.data(), length.size()) == 1 &&
                      EVP_DigestFinal_ex(context, digest.data(), &digest_size) == 1;
  EVP_MD_CTX_free(context);
  if (!hashed) throw SourceError("file source: cannot compute the fingerprint of '" + path_.string() + "'");
  std::string hex;
  pipeline::append_hex(hex, std::string_view(reinterpret_cast<const char*>(digest.data()), digest_size));
  return hex;
}

}  // namespace tidemark::connectors::file
