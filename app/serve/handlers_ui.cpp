// GET /ui/…: the operator console's static files, from the table cmake/embed_files.cmake
// compiles from app/serve/ui/. They hold no data (the page fetches the JSON API with the
// token the user types), so they need no token; every answer carries the headers that keep
// the page from running anything but its own files (docs/console.md).
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/serve/handlers.hpp"
#include "app/serve/ui_assets.hpp"

namespace tidemark::app::serve {

namespace {

// Only the page's own scripts, styles and API calls: no inline script or style, no other
// origin, no plugin, no framing, no form posting anywhere.
constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

std::string_view content_type_of(std::string_view path) {
  struct Type {
    std::string_view extension;
    std::string_view content_type;
  };
  static constexpr Type kTypes[] = {
      {".html", "text/html; charset=utf-8"},       {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},  {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},                   {".png", "image/png"},
      {".json", "application/json"},               {".txt", "text/plain; charset=utf-8"},
  };
  for (const Type& type : kTypes) {
    if (path.ends_with(type.extension)) return type.content_type;
  }
  // LICENSE and other files without a known extension: shown as text, never sniffed.
  return "text/plain; charset=utf-8";
}

HttpResponse with_console_headers(HttpResponse response) {
  response.headers.emplace_back("Content-Security-Policy", std::string(kContentSecurityPolicy));
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
  // The files change with the binary: the browser asks again rather than run an old script
  // against a new API.
  response.headers.emplace_back("Cache-Control", "no-cache");
  return response;
}

}  // namespace

HttpResponse console_file(ApiContext&, const HttpRequest&, const Route& route) {
  // /ui without the slash: the page's relative links (app.js) resolve against /ui/.
  if (route.segments.size() == 1) {
    HttpResponse response{308, "text/plain; charset=utf-8", "/ui/\n", {}};
    response.headers.emplace_back("Location", "/ui/");
    return with_console_headers(std::move(response));
  }
  std::string path;
  for (std::size_t i = 1; i < route.segments.size(); ++i) path += (i == 1 ? "" : "/") + route.segments[i];
  if (path.empty()) path = "index.html";
  const auto& files = ui::kFiles;
  const auto found = std::find_if(files.begin(), files.end(), [&](const ui::EmbeddedFile& file) { return file.path == path; });
  if (found == files.end()) return with_console_headers(error_response(404, "no such file of the console: " + route.path));
  return with_console_headers(HttpResponse{200, std::string(content_type_of(path)), std::string(found->bytes), {}});
}

}  // namespace tidemark::app::serve
