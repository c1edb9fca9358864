#pragma once
// The file connector: a CSV or JSON Lines file, or a folder of them read in lexical order.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "connectors/file/format.hpp"
#include "connectors/file/record_stream.hpp"
#include "pipeline/source.hpp"

namespace tidemark::connectors::file {

// Reads in fixed-size chunks, so memory is bounded by the records returned. Checkpoints name
// a file by its name inside the folder (a single file by its own name) and the byte offset
// just past the last record returned.
class FileSource final : public pipeline::Source {
 public:
  // A folder yields its direct child regular files whose extension matches `format`; a
  // single file is read whatever its extension. Throws pipeline::SourceError when `path`
  // does not exist or the folder cannot be listed.
  FileSource(const std::filesystem::path& path, Format format, std::size_t chunk_bytes = kDefaultChunkBytes);

  const std::string& identity() const override { return identity_; }
  void seek(const pipeline::Checkpoint& from) override;
  std::size_t read(std::vector<pipeline::DecodedRecord>& out, std::size_t max_records) override;
  pipeline::Checkpoint position() const override { return position_; }

  static constexpr std::size_t kDefaultChunkBytes = 1024 * 1024;

 private:
  struct Entry {
    std::string name;
    std::filesystem::path path;
  };
  // Opens files_[index] and positions the stream at `offset` (0: the start of the file).
  void open(std::size_t index, std::uint64_t offset);
  // Appends the next chunk of the open file to the stream; sets at_eof_ at its end.
  void fill();
  std::size_t read_chunk();

  Format format_;
  std::string identity_;
  std::vector<Entry> files_;   // in lexical order of name
  std::size_t next_file_ = 0;  // the file to open when the open one is done
  std::ifstream in_;
  const Entry* open_entry_ = nullptr;
  bool at_eof_ = false;
  std::string chunk_;
  RecordStream stream_;
  pipeline::Checkpoint position_;
};

// A FileSource behind the Source interface, as the run controller uses it.
std::unique_ptr<pipeline::Source> open_file_source(const std::filesystem::path& path, Format format);

}  // namespace tidemark::connectors::file
