#pragma once
// The RFC 8288 Link header: which URL a page names as the next one. Pure; no I/O.
#include <optional>
#include <string>
#include <string_view>

namespace tidemark::connectors::http_api {

// The target of the first link-value in `header` whose rel parameter lists `relation`
// (relation types compare case-insensitively; rel may list several, space-separated), as
// written between < and >; nullopt when none does or the header is not a list of
// `<URI-Reference> *( ";" param )`. Several Link fields of one response are read as one,
// joined with ", " (RFC 9110 §5.3).
std::optional<std::string> link_target(std::string_view header, std::string_view relation);

}  // namespace tidemark::connectors::http_api
