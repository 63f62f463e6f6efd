#include "util/file_access.h"

#include "util/text.h"

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

}  // namespace codefy::util
