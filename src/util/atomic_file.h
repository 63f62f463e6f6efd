// Files written whole or not at all.
#pragma once

#include <filesystem>
#include <string>

namespace codefy::util {

/// Writes `bytes` to `path` through a temporary file in the same folder
/// (fsync, then rename), so readers and a crash see the old file or the
/// complete new one. Creates missing parent folders. On failure the old file
/// stays, the temporary is removed, and std::runtime_error names the path.
void write_file_atomic(const std::filesystem::path& path, const std::string& bytes);

}  // namespace codefy::util
