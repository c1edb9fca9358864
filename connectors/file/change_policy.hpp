#pragma once
// What a run does with a file whose content up to where an earlier run read it changed
// (a file source's `on_change`, docs/sources.md "Files that change").
#include <optional>
#include <string_view>

namespace tidemark::connectors::file {

enum class ChangePolicy {
  kReread,  // read it again from its start: the revision filter applies only what is new
  kFail,    // fail the run when it reaches the file, naming it; nothing of it is loaded
};

// "reread" or "fail"; nullopt for anything else.
inline std::optional<ChangePolicy> parse_change_policy(std::string_view text) {
  if (text == "reread") return ChangePolicy::kReread;
  if (text == "fail") return ChangePolicy::kFail;
  return std::nullopt;
}

}  // namespace tidemark::connectors::file
