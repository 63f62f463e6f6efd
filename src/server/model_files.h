// Model files under <data-dir>/models (CodefyUI's /api/models routes): list,
// upload (multipart, spooled to disk), download (streamed), delete. No path
// leaves the folder.
#pragma once

#include "server/routes.h"

#include <cstdint>
#include <filesystem>

namespace codefy::server {

/// The model file routes over one folder.
class ModelFiles {
 public:
  /// Creates `dir` if it is missing.
  ModelFiles(std::filesystem::path dir, int64_t max_upload_bytes);
  /// Adds GET /api/models, POST /api/models/upload (its body streams to
  /// disk), GET /api/models/download/{path...}, DELETE /api/models/{name}.
  void add_routes(RouteTable& table);

 private:
  Response list() const;
  Response upload(const Request& r) const;
  Response download(const std::string& path) const;
  Response remove(const std::string& name) const;

  std::filesystem::path dir_;
  int64_t max_upload_bytes_;
};

}  // namespace codefy::server
