#include "server/static_files.h"

#include "server/routes.h"
#include "util/text.h"

#include <map>
#include <system_error>

namespace codefy::server {

namespace fs = std::filesystem;

namespace {

constexpr const char* kNotBuilt =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>Codefy</title></head>"
    "<body style=\"font-family:sans-serif;max-width:40em;margin:4em auto\">"
    "<h1>Codefy</h1><p>The server is running, but the editor has not been built. From the checkout run "
    "<code>scripts/build.sh</code> (it builds <code>web/dist</code>), or start the server with "
    "<code>--web-dir</code> pointing at a built editor.</p>"
    "<p>The API answers at <a href=\"/api/health\">/api/health</a>.</p></body></html>";

bool has_extension(const std::string& segment) { return segment.find('.') != std::string::npos; }

}  // namespace

std::string content_type_for(const fs::path& file) {
  static const std::map<std::string, std::string> kTypes = {{".html", "text/html; charset=utf-8"},
                                                            {".js", "text/javascript; charset=utf-8"},
                                                            {".mjs", "text/javascript; charset=utf-8"},
                                                            {".css", "text/css; charset=utf-8"},
                                                            {".json", "application/json"},
                                                            {".map", "application/json"},
                                                            {".svg", "image/svg+xml"},
                                                            {".png", "image/png"},
                                                            {".jpg", "image/jpeg"},
                                                            {".jpeg", "image/jpeg"},
                                                            {".gif", "image/gif"},
                                                            {".webp", "image/webp"},
                                                            {".ico", "image/x-icon"},
                                                            {".woff2", "font/woff2"},
                                                            {".woff", "font/woff"},
                                                            {".txt", "text/plain; charset=utf-8"},
                                                            {".wasm", "application/wasm"},
                                                            {".webmanifest", "application/manifest+json"}};
  auto it = kTypes.find(util::lower(file.extension().string()));
  return it == kTypes.end() ? "application/octet-stream" : it->second;
}

StaticFiles::StaticFiles(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  if (!root_.empty()) root_ = fs::weakly_canonical(root_, ec);
  built_ = !root_.empty() && fs::is_regular_file(root_ / "index.html", ec);
}

bool StaticFiles::serves(const std::string& path) {
  const auto segments = split_path(path);
  return segments.empty() || (segments.front() != "api" && segments.front() != "ws");
}

Response StaticFiles::index() const {
  Response r;
  r.headers["Cache-Control"] = "no-cache";  // it names the hashed assets of the current build
  r.headers["X-Content-Type-Options"] = "nosniff";
  r.content_type = "text/html; charset=utf-8";
  if (built_) {
    r.file = root_ / "index.html";
  } else {
    r.body = kNotBuilt;
  }
  return r;
}

void StaticFiles::prefer_gzip(Response& r, const std::string& accept_encoding) {
  if (r.file.empty()) return;
  r.headers["Vary"] = "Accept-Encoding";  // caches keep the two answers apart
  if (util::lower(accept_encoding).find("gzip") == std::string::npos) return;
  std::error_code ec;
  fs::path gz = r.file;
  gz += ".gz";
  if (!fs::is_regular_file(gz, ec)) return;
  r.file = gz;  // the content type stays the original file's
  r.headers["Content-Encoding"] = "gzip";
}

Response StaticFiles::get(const std::string& path, const std::string& accept_encoding) const {
  Response r = find(path);
  prefer_gzip(r, accept_encoding);
  return r;
}

Response StaticFiles::find(const std::string& path) const {
  const auto segments = split_path(path);
  if (segments.empty() || !built_) return index();
  fs::path file = root_;
  for (const auto& s : segments) {
    // No way out of the root, and no hidden files.
    if (s == ".." || s == "." || s.front() == '.' || s.find('\\') != std::string::npos ||
        s.find('\0') != std::string::npos)
      return Response::error(404, "Not Found");
    file /= s;
  }
  std::error_code ec;
  if (fs::is_regular_file(file, ec)) {
    const fs::path real = fs::canonical(file, ec);
    const auto rel = real.lexically_relative(root_);
    if (ec || rel.empty() || *rel.begin() == "..") return Response::error(404, "Not Found");  // a link out
    Response r;
    r.file = real;
    r.content_type = content_type_for(real);
    r.headers["X-Content-Type-Options"] = "nosniff";
    // Vite names what is under assets/ by content hash: it never changes.
    r.headers["Cache-Control"] = segments.front() == "assets" ? "public, max-age=31536000, immutable" : "no-cache";
    return r;
  }
  // A route of the editor's own (e.g. /graph/x): the page; a missing file: 404.
  if (has_extension(segments.back())) return Response::error(404, "Not Found");
  return index();
}

}  // namespace codefy::server
