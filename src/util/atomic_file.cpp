#include "util/atomic_file.h"
#include "util/errors.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

namespace codefy::util {

namespace fs = std::filesystem;

namespace {

std::atomic<uint64_t> temp_counter{0};

/// The longest file name (one path component) Linux file systems take.
constexpr size_t kNameMax = 255;

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

/// Writes a temp file next to `path` (its content from `fill`, which returns
/// "" or what failed) and renames it over `path`, so readers (and a crash) see
/// either the old file or the complete new one.
void write_atomically(const fs::path& path, const std::function<std::string(int fd)>& fill, mode_t mode = 0666) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create folder " + dir.string() + " for " + path.string() + ": " + ec.message());
  }
  // Unique per process and call, matching the "*.tmp.*" ignore pattern. A
  // name near the 255-byte limit keeps only as much of itself as leaves room
  // for the suffix: the file's own name may be that long, its temporary too.
  const std::string suffix = ".tmp." + std::to_string(::getpid()) + "." + std::to_string(temp_counter.fetch_add(1));
  const std::string name = path.filename().string();
  const fs::path temp = dir / (name.substr(0, kNameMax - suffix.size()) + suffix);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    throw Error("cannot write " + path.string() + ": creating " + temp.string() + " failed: " + std::strerror(errno));
  }
  std::string failure = fill(fd);
  if (!failure.empty()) {
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
    throw Error("cannot write " + path.string() + ": " + failure);
  }
  // Persist the rename itself; best effort, the data is already safe.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace

void write_file_atomic(const fs::path& path, std::string_view bytes, unsigned mode) {
  write_atomically(
      path,
      [bytes](int fd) {
        return write_all(fd, bytes.data(), bytes.size()) ? std::string()
                                                         : std::string("write failed: ") + std::strerror(errno);
      },
      static_cast<mode_t>(mode));
}

void copy_file_range_atomic(const fs::path& path, const fs::path& source, uint64_t offset, uint64_t size) {
  const int in = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw Error("cannot read " + source.string() + ": " + std::strerror(errno));
  try {
    write_atomically(path, [&](int fd) {
      std::vector<char> buf(1 << 20);
      uint64_t done = 0;
      while (done < size) {
        const ssize_t n =
            ::pread(in, buf.data(), std::min<uint64_t>(buf.size(), size - done), static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::string("reading ") + source.string() + " failed";
        if (!write_all(fd, buf.data(), static_cast<size_t>(n)))
          return std::string("write failed: ") + std::strerror(errno);
        done += static_cast<uint64_t>(n);
      }
      return std::string();
    });
  } catch (...) {
    ::close(in);
    throw;
  }
  ::close(in);
}

bool is_atomic_temp_name(const std::string& name, long* pid) {
  // <file>.tmp.<digits>.<digits>, <file> not empty.
  const size_t last = name.rfind('.');
  if (last == std::string::npos || last + 1 == name.size()) return false;
  const size_t mid = last == 0 ? std::string::npos : name.rfind('.', last - 1);
  if (mid == std::string::npos || mid + 1 == last || mid < 5 || name.compare(mid - 4, 4, ".tmp") != 0) return false;
  const auto digits = [&](size_t from, size_t to) {
    if (to - from > 18) return false;
    for (size_t i = from; i < to; ++i)
      if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
    return true;
  };
  if (!digits(mid + 1, last) || !digits(last + 1, name.size())) return false;
  if (pid) *pid = std::stol(name.substr(mid + 1, last - mid - 1));
  return true;
}

size_t remove_stale_temp_files(const fs::path& dir, size_t max_entries) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  const auto day_ago = fs::file_time_type::clock::now() - std::chrono::hours(24);
  size_t removed = 0, seen = 0;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end && seen < max_entries; it.increment(ec), ++seen) {
    long pid = 0;
    std::error_code fec;  // an entry that cannot be looked at is skipped
    if (!it->is_regular_file(fec) || !is_atomic_temp_name(it->path().filename().string(), &pid)) continue;
    const bool writer_gone = pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH);
    const auto mtime = fs::last_write_time(it->path(), fec);
    if (writer_gone || (!fec && mtime < day_ago))
      if (fs::remove(it->path(), fec)) ++removed;
  }
  return removed;
}

}  // namespace codefy::util
