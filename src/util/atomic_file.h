// Files written whole or not at all.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace codefy::util {

/// Writes `bytes` to `path` through a temporary file in the same folder
/// (fsync, then rename), so readers and a crash see the old file or the
/// complete new one. Creates missing parent folders. On failure the old file
/// stays, the temporary is removed, and codefy::Error names the path.
/// `mode` is the new file's permission bits (before the umask): 0600 for secrets.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, unsigned mode = 0666);

/// As write_file_atomic, with `size` bytes of `source` from `offset` (read in
/// pieces: a large upload spooled to disk never passes through memory whole).
void copy_file_range_atomic(const std::filesystem::path& path, const std::filesystem::path& source, uint64_t offset,
                            uint64_t size);

}  // namespace codefy::util
