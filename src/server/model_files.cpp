// The model file routes: CodefyUI's extensions and file name rules, uploads
// written whole or not at all, downloads streamed from disk.
#include "server/model_files.h"

#include "server/multipart.h"
#include "util/atomic_file.h"
#include "util/text.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace codefy::server {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kModelExtensions = {".bin", ".ckpt", ".pt", ".pth", ".safetensors"};

bool is_model_file(const fs::path& p) {
  const std::string ext = util::lower(p.extension().string());
  return std::find(kModelExtensions.begin(), kModelExtensions.end(), ext) != kModelExtensions.end();
}

bool has_control_character(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

/// Whether a part of `rel` between slashes is longer than a file name may be.
bool has_overlong_part(const std::string& rel) {
  size_t start = 0;
  for (size_t slash; (slash = rel.find('/', start)) != std::string::npos; start = slash + 1)
    if (slash - start > 255) return true;
  return rel.size() - start > 255;
}

/// `rel` resolved under `base`; nullopt when it would leave it (or names it),
/// or cannot be a name at all (the file system would refuse to look it up).
std::optional<fs::path> inside_folder(const fs::path& base, const std::string& rel) {
  if (rel.empty() || has_control_character(rel) || has_overlong_part(rel)) return std::nullopt;
  const fs::path root = fs::weakly_canonical(base);
  const fs::path p = fs::weakly_canonical(root / rel);
  const auto [r, q] = std::mismatch(root.begin(), root.end(), p.begin(), p.end());
  if (r != root.end() || q == p.end()) return std::nullopt;
  return p;
}

/// Why an uploaded file's name cannot be stored ("" when it can): CodefyUI's rules.
std::string upload_name_problem(const std::string& name) {
  if (has_control_character(name)) return "the file name contains a control character";
  if (name.find_first_of("<>:\"\\|?*") != std::string::npos)
    return "the file name contains one of < > : \" \\ | ? * -- rename the file";
  if (name.size() > 255) return "the file name is longer than 255 bytes -- rename the file";
  if (name.find_first_not_of('.') == std::string::npos) return "the file name is only dots";
  static const std::vector<std::string> reserved = {"con", "prn", "aux", "nul"};
  const std::string stem = util::lower(name.substr(0, name.find('.')));
  const bool numbered =
      stem.size() == 4 && (stem.rfind("com", 0) == 0 || stem.rfind("lpt", 0) == 0) && stem[3] >= '1' && stem[3] <= '9';
  if (numbered || std::find(reserved.begin(), reserved.end(), stem) != reserved.end())
    return "the file name is a Windows device name (" + stem + ") -- rename the file";
  return "";
}

/// A model file named by `rel` under `dir`, or the answer refusing it.
struct FoundModelFile {
  fs::path path;
  std::optional<Response> refusal;
};
FoundModelFile find_model_file(const fs::path& dir, const std::string& rel) {
  const auto path = inside_folder(dir, rel);
  if (!path) return {{}, Response::error(400, "Invalid filename")};
  std::error_code ec;
  const fs::file_status status = fs::status(*path, ec);
  if (!fs::exists(status)) return {{}, Response::error(404, "File not found: " + rel)};
  if (!fs::is_regular_file(status)) return {{}, Response::error(400, "Not a file")};
  if (!is_model_file(*path)) return {{}, Response::error(400, "Not a model file")};
  return {*path, std::nullopt};
}

}  // namespace

ModelFiles::ModelFiles(fs::path dir, int64_t max_upload_bytes)
    : dir_(std::move(dir)), max_upload_bytes_(max_upload_bytes) {
  fs::create_directories(dir_);
}

void ModelFiles::add_routes(RouteTable& table) {
  table.add("GET", "/api/models", [this](const Request&, const PathParams&) { return list(); });
  table.add(Route{"POST", "/api/models/upload",
                  answer_now([this](const Request& r, const PathParams&) { return upload(r); }),
                  /*streams_body_to_disk=*/true});
  table.add("GET", "/api/models/download/{path...}",
            [this](const Request&, const PathParams& p) { return download(p.at("path")); });
  table.add("DELETE", "/api/models/{name}",
            [this](const Request&, const PathParams& p) { return remove(p.at("name")); });
}

Response ModelFiles::list() const {
  std::vector<std::pair<std::string, uintmax_t>> files;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.is_regular_file() && is_model_file(e.path())) files.emplace_back(e.path().filename().string(), e.file_size());
  std::sort(files.begin(), files.end());
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, size] : files) list.push_back({{"filename", name}, {"size", size}});
  return Response::json(200, list);
}

Response ModelFiles::upload(const Request& r) const {
  const bool spooled = !r.body_file.empty();  // the server spools uploads to disk when it has a spool folder
  const auto form = spooled ? parse_multipart_file(r.header("content-type"), r.body_file)
                            : parse_multipart(r.header("content-type"), r.body);
  const auto file = std::find_if(form.begin(), form.end(), [](const FormPart& p) { return p.name == "file"; });
  if (file == form.end()) return Response::error(422, "the form needs a field named \"file\"");
  const std::string name = file->filename.substr(file->filename.find_last_of('/') + 1);  // npos + 1 == 0
  if (name.empty()) return Response::error(400, "No filename provided");
  if (const std::string problem = upload_name_problem(name); !problem.empty())
    return Response::error(400, "Invalid filename: " + problem);
  if (!is_model_file(name))
    return Response::error(400, "Unsupported file type: " + util::lower(fs::path(name).extension().string()) +
                                    ". Allowed: " + util::join(kModelExtensions, ", "));
  if (static_cast<int64_t>(file->size) > max_upload_bytes_) return Response::error(413, "File too large");
  const auto target = inside_folder(dir_, name);
  if (!target) return Response::error(400, "Invalid filename");
  // Written whole or not at all: a half-written model never shows under its name.
  if (spooled)
    util::copy_file_range_atomic(*target, r.body_file, file->offset, file->size);
  else
    util::write_file_atomic(*target, std::string_view(r.body).substr(file->offset, file->size));
  return Response::json(200, {{"filename", name}, {"size", file->size}});
}

Response ModelFiles::download(const std::string& path) const {
  const auto [file, refusal] = find_model_file(dir_, path);
  if (refusal) return *refusal;
  Response res;
  res.file = file;
  res.content_type = "application/octet-stream";
  res.headers["Content-Disposition"] = "attachment; filename=\"" + file.filename().string() + "\"";
  return res;
}

Response ModelFiles::remove(const std::string& name) const {
  const auto [file, refusal] = find_model_file(dir_, name);
  if (refusal) return *refusal;
  fs::remove(file);
  return Response::json(200, {{"message", "Deleted " + name}});
}

}  // namespace codefy::server
