// multipart/form-data parsing over a body in memory or in a file.
#include "server/multipart.h"

#include "util/text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>
#include <stdexcept>

namespace codefy::server {

namespace fs = std::filesystem;

namespace {

/// A header parameter's value: `key="value"` or `key=value` among `;`-separated parameters.
std::string header_param(const std::string& header, const std::string& key) {
  std::stringstream in(header);
  std::string item;
  while (std::getline(in, item, ';')) {
    const size_t a = item.find_first_not_of(" \t");
    if (a == std::string::npos) continue;
    item = item.substr(a);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || util::lower(item.substr(0, eq)) != key) continue;
    std::string v = item.substr(eq + 1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  return "";
}

/// Random access to a request body: in memory, or spooled to a file and read
/// in pieces (a 500 MB upload never sits in the server's memory).
class BodySource {
 public:
  virtual ~BodySource() = default;
  virtual size_t size() const = 0;
  /// Up to `n` bytes from `pos`.
  virtual std::string read(size_t pos, size_t n) const = 0;
  /// Where `needle` first starts at or after `from`; npos when nowhere.
  virtual size_t find(const std::string& needle, size_t from) const = 0;
  bool starts_with_at(size_t pos, const std::string& s) const { return read(pos, s.size()) == s; }
};

class MemorySource : public BodySource {
 public:
  explicit MemorySource(std::string_view body) : body_(body) {}
  size_t size() const override { return body_.size(); }
  std::string read(size_t pos, size_t n) const override {
    return pos >= body_.size() ? std::string() : std::string(body_.substr(pos, n));
  }
  size_t find(const std::string& needle, size_t from) const override { return body_.find(needle, from); }

 private:
  std::string_view body_;
};

class FileSource : public BodySource {
 public:
  FileSource(const fs::path& p, size_t chunk) : chunk_(std::max<size_t>(chunk, 1)) {
    fd_ = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0) throw std::runtime_error("cannot read the uploaded body");
    size_ = static_cast<size_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  size_t size() const override { return size_; }
  std::string read(size_t pos, size_t n) const override {
    if (pos >= size_) return std::string();
    std::string out(std::min(n, size_ - pos), '\0');
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t got = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(pos + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw std::runtime_error("cannot read the uploaded body");
      done += static_cast<size_t>(got);
    }
    return out;
  }
  size_t find(const std::string& needle, size_t from) const override {
    // Windows of chunk + needle - 1 bytes, chunk apart: a match starting in a
    // window's first `chunk` bytes lies wholly inside it.
    for (size_t pos = from; pos < size_; pos += chunk_) {
      const std::string window = read(pos, chunk_ + needle.size() - 1);
      const size_t i = window.find(needle);
      if (i != std::string::npos) return pos + i;
    }
    return std::string::npos;
  }

 private:
  int fd_ = -1;
  size_t size_ = 0;
  size_t chunk_;
};

std::vector<FormPart> parse_form(const std::string& content_type, const BodySource& body) {
  if (util::lower(content_type).rfind("multipart/form-data", 0) != 0)
    throw std::invalid_argument("expected a multipart/form-data body with the file in a field named \"file\"");
  const std::string boundary = header_param(content_type, "boundary");
  if (boundary.empty()) throw std::invalid_argument("the multipart Content-Type has no boundary");
  const std::string delim = "--" + boundary;
  const std::string delim_line = "\r\n" + delim;
  const auto bad = [] { return std::invalid_argument("malformed multipart body"); };
  size_t pos = body.find(delim, 0);
  if (pos == std::string::npos) throw bad();
  pos += delim.size();
  std::vector<FormPart> parts;
  while (!body.starts_with_at(pos, "--")) {
    if (!body.starts_with_at(pos, "\r\n")) throw bad();
    const size_t header_end = body.find("\r\n\r\n", pos + 2);
    if (header_end == std::string::npos || header_end - pos > size_t{64} * 1024) throw bad();
    // The part ends at CRLF--boundary followed by CRLF or "--" (a longer line
    // that merely starts with the boundary is data).
    size_t next = header_end + 4;
    while (true) {
      next = body.find(delim_line, next);
      if (next == std::string::npos) throw bad();
      const size_t after = next + delim_line.size();
      if (body.starts_with_at(after, "\r\n") || body.starts_with_at(after, "--")) break;
      ++next;
    }
    FormPart part;
    std::stringstream headers(body.read(pos + 2, header_end - pos - 2));
    std::string line;
    while (std::getline(headers, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t colon = line.find(':');
      if (colon == std::string::npos || util::lower(line.substr(0, colon)) != "content-disposition") continue;
      part.name = header_param(line.substr(colon + 1), "name");
      part.filename = header_param(line.substr(colon + 1), "filename");
    }
    part.offset = header_end + 4;
    part.size = next - part.offset;
    parts.push_back(std::move(part));
    pos = next + delim_line.size();
  }
  return parts;
}

}  // namespace

std::vector<FormPart> parse_multipart(const std::string& content_type, std::string_view body) {
  return parse_form(content_type, MemorySource(body));
}

std::vector<FormPart> parse_multipart_file(const std::string& content_type, const fs::path& body, size_t chunk) {
  return parse_form(content_type, FileSource(body, chunk));
}

}  // namespace codefy::server
