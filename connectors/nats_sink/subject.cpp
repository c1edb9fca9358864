#include "connectors/nats_sink/subject.hpp"

#include <algorithm>

#include "pipeline/core/names.hpp"
#include "pipeline/core/percent_encode.hpp"

namespace tidemark::connectors::nats_sink {

std::string subject_token(std::string_view key) {
  return pipeline::percent_encode(key, [](unsigned char byte) { return pipeline::is_name_char(static_cast<char>(byte)); });
}

std::string subject_for(std::string_view subject, std::string_view partition_key) {
  std::string out(subject);
  out += '.';
  if (partition_key.empty()) {
    out += kNoPartitionToken;
  } else {
    out += subject_token(partition_key);
  }
  return out;
}

bool is_publish_subject(std::string_view subject) {
  if (subject.empty() || subject.front() == '.' || subject.back() == '.') return false;
  if (subject.find("..") != std::string_view::npos) return false;
  return std::all_of(subject.begin(), subject.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte > 0x20 && byte != 0x7F && c != '*' && c != '>';
  });
}

bool is_stream_name(std::string_view name) {
  return !name.empty() && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte > 0x20 && byte < 0x7F && c != '.' && c != '*' && c != '>' && c != '/' && c != '\\';
  });
}

}  // namespace tidemark::connectors::nats_sink
