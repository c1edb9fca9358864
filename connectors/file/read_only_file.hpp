#pragma once
// A file opened for reading by descriptor: what the file source reads, and the identity and
// fingerprint the registry of files read keeps of it (pipeline::FileMark).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace tidemark::connectors::file {

// How much of a file's start, and of its bytes before the offset read up to, its fingerprint
// covers (docs/sources.md "Files that change").
inline constexpr std::size_t kFingerprintBytes = 1024;

class ReadOnlyFile {
 public:
  // Opens `path` without blocking (a FIFO without a writer would block open() until one came)
  // and refuses anything but a regular file. Throws pipeline::SourceError, naming the path.
  explicit ReadOnlyFile(const std::filesystem::path& path);
  ~ReadOnlyFile();
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  std::uint64_t device() const { return device_; }
  std::uint64_t inode() const { return inode_; }
  // Its size now (it may grow while it is read).
  std::uint64_t size() const;
  // Reads up to `size` bytes at the current offset into `buffer`; 0 at the end.
  std::size_t read(char* buffer, std::size_t size);
  void seek(std::uint64_t offset);
  // Hex SHA-256 of its first kFingerprintBytes and of its kFingerprintBytes before `bytes`
  // (each cut to `bytes`), and of `bytes` itself: what a run compares to tell whether the
  // bytes read so far are still there. Reads at those offsets; the current offset stays.
  std::string fingerprint(std::uint64_t bytes) const;

 private:
  std::size_t read_at(std::uint64_t offset, char* buffer, std::size_t size) const;
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t device_ = 0;
  std::uint64_t inode_ = 0;
};

}  // namespace tidemark::connectors::file
