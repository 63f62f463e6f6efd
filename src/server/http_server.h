// `codefy serve`'s HTTP server: Boost.Beast sessions as in Beast's async
// examples (a strand per connection, read timeouts, a body limit), feeding
// the socket-free Api. Long work never runs on an I/O thread: the Api hands
// runs to the per-device queues and answers when they end.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace codefy::server {

class Api;

/// The largest model file an upload may bring by default: CodefyUI's
/// CODEFYUI_MAX_UPLOAD_SIZE default, 500 MiB.
inline constexpr int64_t kDefaultUploadBytesMax = 524288000;

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;                          ///< 0: any free port (tests)
  size_t body_limit = 16u << 20;                 ///< larger bodies get 413
  size_t upload_limit = kDefaultUploadBytesMax;  ///< largest file /api/models/upload takes (plus 64 KiB of form)
  /// Where upload bodies are received (a file each, removed once answered);
  /// empty: uploads are read into memory like other bodies.
  std::filesystem::path spool_dir;
  int max_uploads = 4;  ///< uploads received at once; more get 503
  int io_threads = 2;
  /// An idle timeout: a client that sends no byte (or takes none of the
  /// answer) for this long is dropped. A slow upload that keeps sending is
  /// never cut off.
  std::chrono::milliseconds read_timeout{30000};
  /// The whole request header must arrive within this, however steadily it
  /// trickles in (slowloris); the wait for the next request on a kept-alive
  /// connection counts too.
  std::chrono::milliseconds header_timeout{30000};
  /// A request refused before its body was read (403, 413, 421, 431) is
  /// answered, then the rest the client sends is read and dropped until it
  /// stops (nginx's lingering_close): closing with bytes unread would reset
  /// the connection and the client could lose the answer. Bounded by the
  /// first of: this long without a byte, this long in all, this many bytes.
  std::chrono::milliseconds linger_idle{5000};
  std::chrono::milliseconds linger_total{30000};
  size_t linger_bytes = 128u << 20;
  /// A WebSocket client that reads slower than a run reports loses progress
  /// frames past this many messages queued for it (statuses, errors and a
  /// run's final message are always queued); its own actions are read again
  /// once the queue is down to half.
  size_t ws_max_queued = 4096;
  /// The kernel's send buffer of a WebSocket connection: what a client that
  /// stops reading holds there before the queue above takes over (Linux would
  /// otherwise grow it to megabytes of stale progress).
  int ws_send_buffer = 256 << 10;
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, Api& api);
  ~HttpServer();
  /// Binds, tells the Api which Host/Origin values are this server's, starts
  /// the I/O threads; returns the bound port. Throws std::runtime_error when
  /// the address cannot be bound.
  uint16_t start();
  /// Stops accepting, closes connections, joins the I/O threads.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace codefy::server
