#include "util/file_access.h"

#include "util/text.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

namespace codefy::util {

namespace fs = std::filesystem;

namespace {

/// `path` absolute, with links and `..` resolved as far as it exists.
fs::path real(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path).lexically_normal() : p;
}

bool is_within(const fs::path& path, const fs::path& dir) {
  const fs::path rel = path.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

FileAccess::FileAccess(std::vector<Root> roots) : roots_(std::move(roots)), confined_(true) {
  for (auto& r : roots_) r.dir = real(r.dir);
}

const FileAccess::Root* FileAccess::root_of(const fs::path& path) const {
  const fs::path p = real(path);
  const Root* found = nullptr;
  for (const auto& r : roots_)  // the innermost root decides (examples inside the data folder stay read-only)
    if (is_within(p, r.dir) && (!found || is_within(r.dir, found->dir))) found = &r;
  return found;
}

fs::path FileAccess::check_read(const fs::path& path) const {
  if (confined_ && !root_of(path))
    throw FileAccessError(path.string() + " is outside the folders this server reads: " + describe() +
                          " (start codefy serve with --allow-path DIR to add one)");
  return path;
}

fs::path FileAccess::check_write(const fs::path& path) const {
  if (!confined_) return path;
  const Root* r = root_of(path);
  if (!r)
    throw FileAccessError(path.string() + " is outside the folders this server writes: " + describe() +
                          " (start codefy serve with --allow-path DIR to add one)");
  if (!r->writable) throw FileAccessError(path.string() + " is in " + r->what + ", which this server only reads");
  return path;
}

std::string FileAccess::describe() const {
  std::vector<std::string> parts;
  for (const auto& r : roots_) parts.push_back(r.what + " " + r.dir.string() + (r.writable ? "" : " (read-only)"));
  return parts.empty() ? "none" : join(parts, ", ");
}

void write_run_files(const fs::path& file, const RunFiles& files) {
  nlohmann::json roots = nlohmann::json::array();
  if (files.access)
    for (const auto& r : files.access->roots())
      roots.push_back({{"dir", r.dir.string()}, {"writable", r.writable}, {"what", r.what}});
  const nlohmann::json j = {{"confined", files.access && files.access->confined()},
                            {"roots", roots},
                            {"output_dir", files.output_dir.string()}};
  std::ofstream out(file, std::ios::trunc);
  out << j.dump();
  if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
}

RunFiles read_run_files(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read it");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.value("roots", nlohmann::json()).is_array())
    throw std::runtime_error("expected {\"confined\", \"roots\": [{\"dir\", \"writable\", \"what\"}], \"output_dir\"}");
  RunFiles files;
  if (j.value("confined", false)) {
    std::vector<FileAccess::Root> roots;
    for (const auto& r : j["roots"]) {
      if (!r.is_object() || !r.value("dir", nlohmann::json()).is_string())
        throw std::runtime_error("a root without a \"dir\"");
      roots.push_back({r["dir"].get<std::string>(), r.value("writable", false), r.value("what", std::string())});
    }
    files.access = std::make_shared<const FileAccess>(std::move(roots));
  }
  files.output_dir = j.value("output_dir", std::string());
  return files;
}

}  // namespace codefy::util
