// Small helpers every test area uses.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace codefy::testing {

/// A fresh folder under the system temp dir, removed with its contents.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    std::string pattern = (std::filesystem::temp_directory_path() / ("codefy_" + tag + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    // A test may have made it read-only.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Parses a JSON file; throws naming the path when it cannot be read.
inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

/// Writes `j` to `path` (test fixtures).
inline void write_json_file(const std::filesystem::path& path, const nlohmann::json& j) {
  std::ofstream out(path);
  out << j.dump(2);
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

/// A committed golden-value file from tests/golden/ (made by scripts/golden/make_golden.py).
inline nlohmann::json read_golden(const std::string& name) {
  return read_json_file(std::filesystem::path(CODEFY_SOURCE_DIR) / "tests/golden" / name);
}

}  // namespace codefy::testing
