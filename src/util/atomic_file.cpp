#include "util/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace codefy::util {

namespace fs = std::filesystem;

namespace {

std::atomic<uint64_t> temp_counter{0};

/// Writes `size` bytes to `fd`, retrying short writes and EINTR.
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Writes a temp file next to `path` and renames it over `path`, so readers
/// (and a crash) see either the old file or the complete new one.
void write_atomically(const fs::path& path, const char* data, size_t size) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create folder " + dir.string() + " for " + path.string() + ": " + ec.message());
  }
  // Unique per process and call, matching the "*.tmp.*" ignore pattern.
  const fs::path temp = dir / (path.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                               std::to_string(temp_counter.fetch_add(1)));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw std::runtime_error("cannot write " + path.string() + ": creating " + temp.string() + " failed: " +
                             std::strerror(errno));
  }
  std::string failure;
  if (!write_all(fd, data, size)) {
    failure = std::string("write failed: ") + std::strerror(errno);
  } else if (::fsync(fd) != 0) {
    failure = std::string("fsync failed: ") + std::strerror(errno);
  }
  if (::close(fd) != 0 && failure.empty()) failure = std::string("close failed: ") + std::strerror(errno);
  if (failure.empty()) {
    fs::rename(temp, path, ec);
    if (ec) failure = "rename failed: " + ec.message();
  }
  if (!failure.empty()) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw std::runtime_error("cannot write " + path.string() + ": " + failure);
  }
  // Persist the rename itself; best effort, the data is already safe.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace

void write_file_atomic(const fs::path& path, const std::string& bytes) {
  write_atomically(path, bytes.data(), bytes.size());
}

}  // namespace codefy::util
