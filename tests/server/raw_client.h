// A client on a plain socket for tests that send exactly the bytes they
// mean (malformed framing, slow or stalled senders), and the answer parsed
// from the raw text.
#pragma once

#include "fixture.h"

#include <poll.h>

#include <array>
#include <chrono>
#include <map>
#include <string>

namespace codefy::server {

/// A response read off a raw socket.
struct RawReply {
  int status = 0;
  std::map<std::string, std::string> headers;  ///< names lower-case
  std::string body;
  bool complete = false;  ///< the body has the length its Content-Length says
};

inline RawReply parse_reply(const std::string& text) {
  RawReply r;
  const size_t end = text.find("\r\n\r\n");
  if (text.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return r;
  r.status = std::stoi(text.substr(9, 3));
  size_t line = text.find("\r\n") + 2;
  while (line < end) {
    const size_t next = text.find("\r\n", line);
    const std::string h = text.substr(line, next - line);
    const size_t colon = h.find(':');
    r.headers[util::lower(h.substr(0, colon))] = h.substr(h.find_first_not_of(' ', colon + 1));
    line = next + 2;
  }
  r.body = text.substr(end + 4);
  const auto length = r.headers.find("content-length");
  r.complete = length != r.headers.end() && std::to_string(r.body.size()) == length->second;
  return r;
}

/// A client on a plain socket: it sends exactly the bytes given, when told.
struct RawClient {
  net::io_context ioc;
  tcp::socket socket{ioc};
  explicit RawClient(uint16_t port) { socket.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port)); }
  beast::error_code send(const std::string& bytes) {
    beast::error_code ec;
    net::write(socket, net::buffer(bytes), ec);  // MSG_NOSIGNAL: a closed peer is an error code, not SIGPIPE
    return ec;
  }
  /// Whether the server has sent something (or closed) within `wait`.
  bool answered_within(std::chrono::milliseconds wait) {
    pollfd p{socket.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(wait.count())) == 1;
  }
  /// Reads until the server ends the connection; `ec` says how it ended (eof when cleanly).
  std::string read_to_end(beast::error_code& ec) {
    std::string out;
    std::array<char, 65536> chunk;
    for (;;) {
      const size_t n = socket.read_some(net::buffer(chunk), ec);
      out.append(chunk.data(), n);
      if (ec) return out;
    }
  }
};

}  // namespace codefy::server
