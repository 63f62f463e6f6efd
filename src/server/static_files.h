// The editor's built files (web/dist) served at `/`: content types, long
// caching for Vite's hashed assets, none for index.html, and index.html for
// any other path the editor routes itself (single-page app fallback).
#pragma once

#include "server/http_message.h"

#include <filesystem>
#include <string>

namespace codefy::server {

class StaticFiles {
 public:
  /// `root` holds index.html and assets/; empty or missing: the editor was
  /// not built, and `/` says how to build it.
  explicit StaticFiles(std::filesystem::path root);

  /// Whether a GET of `path` that no API route takes is for these files
  /// (everything outside /api/ and /ws/).
  static bool serves(const std::string& path);
  /// The answer to GET `path`: the file under the root, index.html for a
  /// path that names no file (and no file extension), 404 otherwise. Never
  /// leaves the root. With `accept_encoding` (the request's Accept-Encoding)
  /// naming gzip, a `<file>.gz` the build wrote beside the file is sent instead.
  Response get(const std::string& path, const std::string& accept_encoding = "") const;

  const std::filesystem::path& root() const { return root_; }
  bool built() const { return built_; }

 private:
  Response index() const;
  Response find(const std::string& path) const;
  /// Sends `r.file`'s precompressed twin when there is one and the client takes gzip.
  static void prefer_gzip(Response& r, const std::string& accept_encoding);
  std::filesystem::path root_;
  bool built_ = false;
};

/// The Content-Type for a file name, by its extension (octet-stream when unknown).
std::string content_type_for(const std::filesystem::path& file);

}  // namespace codefy::server
