// Files written whole or not at all.
#pragma once

#include <cstddef>
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

/// Whether `name` is one of the temporaries these functions write
/// ("<file>.tmp.<pid>.<n>"); sets `pid` to the writer's process id.
bool is_atomic_temp_name(const std::string& name, long* pid = nullptr);

/// Removes temporaries that an interrupted write left under `dir` (and its
/// folders, symlinks not followed, at most `max_entries` entries looked at):
/// those whose writer process is gone, and any older than a day. A live
/// process's write in progress is left alone. Returns how many went.
size_t remove_stale_temp_files(const std::filesystem::path& dir, size_t max_entries = 100000);

}  // namespace codefy::util
