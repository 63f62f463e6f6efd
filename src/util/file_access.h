// Which folders a run's nodes may read and write (codefy serve confines them).
#pragma once

#include "util/errors.h"

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace codefy::util {

/// A path a run may not use, or an output that would replace a file that is
/// not one of ours. The message names the path and, for a confined run, the
/// folders it may use.
class FileAccessError : public InputError {
 public:
  using InputError::InputError;
};

/// The folders a confined run may use. Paths are compared after resolving
/// symbolic links and `..` as far as they exist, so a link inside an allowed
/// folder that points outside it is outside.
class FileAccess {
 public:
  struct Root {
    std::filesystem::path dir;
    bool writable = false;
    std::string what;  ///< for messages: "the data folder", "the examples (read-only)"
  };

  /// Everything the process may reach (`codefy run`: the user's own paths).
  FileAccess() = default;
  explicit FileAccess(std::vector<Root> roots);

  bool confined() const { return confined_; }
  const std::vector<Root>& roots() const { return roots_; }

  /// `path` when a node may read it; FileAccessError otherwise.
  std::filesystem::path check_read(const std::filesystem::path& path) const;
  /// `path` when a node may write it; FileAccessError otherwise.
  std::filesystem::path check_write(const std::filesystem::path& path) const;
  /// "the data folder /srv/codefy, the examples /opt/examples (read-only), ..."
  std::string describe() const;

 private:
  const Root* root_of(const std::filesystem::path& path) const;
  std::vector<Root> roots_;
  bool confined_ = false;
};

/// The folders a run may use and where an example's outputs go, as codefy
/// serve hands them to the data-parallel ranks it starts (a JSON file).
struct RunFiles {
  std::shared_ptr<const FileAccess> access;  ///< null: unconfined
  std::filesystem::path output_dir;
};
void write_run_files(const std::filesystem::path& file, const RunFiles& files);
/// Throws std::runtime_error when the file cannot be read or is malformed.
RunFiles read_run_files(const std::filesystem::path& file);

/// Refuses (FileAccessError) to replace `path` with an output unless it is
/// missing or `is_ours` says it is a file of the kind the output writes
/// (`kind`, e.g. "weights file"): a folder, a link to elsewhere or any other
/// file is left alone, and the message says how to proceed.
template <class IsOurs>
void check_replaceable(const std::filesystem::path& path, const std::string& kind, IsOurs is_ours) {
  std::error_code ec;
  const auto st = std::filesystem::symlink_status(path, ec);
  if (ec || !std::filesystem::exists(st)) return;
  if (!std::filesystem::is_regular_file(st) || !is_ours(path))
    throw FileAccessError(path.string() + " exists and is not a " + kind +
                          " written by Codefy; it is left as it is: choose another path, or move that file away");
}

}  // namespace codefy::util
