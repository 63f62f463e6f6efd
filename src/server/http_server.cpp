// Beast sessions: HTTP requests to the Api (bodies in memory or spooled), WebSocket /ws/execution.
#include "server/http_server.h"

#include "server/api.h"
#include "util/text.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace codefy::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

/// What the sessions of one server share: upload spool names and how many
/// uploads are being received.
struct Uploads {
  std::atomic<uint64_t> next{0};
  std::atomic<int> in_flight{0};
};

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Percent-decoding ('+' stays '+' in paths; in queries it is a space).
std::string decode(const std::string& s, bool query) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else if (query && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

Request to_request(const http::request_header<>& req, bool loopback) {
  Request r;
  r.method = std::string(req.method_string());
  const std::string target(req.target());
  const size_t q = target.find('?');
  r.path = decode(target.substr(0, q), false);
  if (q != std::string::npos) {
    std::string rest = target.substr(q + 1);
    size_t start = 0;
    while (start <= rest.size()) {
      const size_t amp = rest.find('&', start);
      const std::string pair = rest.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
      const size_t eq = pair.find('=');
      if (!pair.empty())
        r.query[decode(pair.substr(0, eq), true)] = eq == std::string::npos ? "" : decode(pair.substr(eq + 1), true);
      if (amp == std::string::npos) break;
      start = amp + 1;
    }
  }
  for (const auto& f : req) r.headers[util::lower(std::string(f.name_string()))] = std::string(f.value());
  r.from_loopback = loopback;
  return r;
}

constexpr const char* kBothLengths = "Content-Length and Transfer-Encoding together: the body's length is ambiguous";
constexpr const char* kNotChunked = "Transfer-Encoding must name chunked, once and last (the body's length is unknown)";

/// What RFC 9112 answers with 400 in a header Beast parsed without
/// complaint, or "": a Host missing (HTTP/1.1) or given twice (the access
/// checks would trust one of them), a Transfer-Encoding that does not end in
/// chunked (a request's body length cannot be known then).
std::string framing_problem(const http::request_header<>& h, bool chunked) {
  const auto hosts = h.equal_range(http::field::host);
  const auto host_count = std::distance(hosts.first, hosts.second);
  if (host_count > 1) return "Host is given more than once";
  if (host_count == 0 && h.version() >= 11) return "Host is missing (HTTP/1.1 requires it)";
  if (h.count(http::field::transfer_encoding) > 0 && !chunked) return kNotChunked;
  return "";
}

/// The 400 answer's words when `ec` says the request's bytes are malformed,
/// or "" when it says something else (the client closed, went quiet, reset).
/// `h` holds the fields parsed before the fault.
std::string bad_request(beast::error_code ec, const http::request_header<>& h) {
  if (!ec || ec.category() != beast::error_code(http::error::bad_field).category()) return "";
  const bool has_length = h.count(http::field::content_length) > 0;
  const bool has_encoding = h.count(http::field::transfer_encoding) > 0;
  switch (static_cast<http::error>(ec.value())) {
    case http::error::end_of_stream:
    case http::error::partial_message:
    case http::error::need_more: return "";
    case http::error::bad_content_length:  // not a number, too large, or after Transfer-Encoding: chunked
      return has_encoding ? kBothLengths : "Content-Length is not a byte count (a whole number below 2^64)";
    case http::error::bad_transfer_encoding:  // after Content-Length, or chunked twice
      return has_length ? kBothLengths : kNotChunked;
    case http::error::multiple_content_length: return "Content-Length is given more than once with different values";
    default: return "malformed request: " + ec.message();
  }
}

/// One editor connection on /ws/execution: reads actions, writes the run's
/// events through a bounded queue on its strand.
/// A training progress frame (per batch or per epoch): the only kind a slow client may miss.
bool is_progress(const std::string& text) {
  return text.find("\"type\":\"node_progress\"") != std::string::npos ||
         text.find("\"status\":\"progress\"") != std::string::npos;
}

class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(tcp::socket&& socket, Api& api, const ServerOptions& options)
      : ws_(std::move(socket)), api_(api), options_(options) {}

  void run(http::request<http::string_body> req) {
    beast::error_code ec;  // a socket that refuses the size keeps the system's
    beast::get_lowest_layer(ws_).socket().set_option(net::socket_base::send_buffer_size(options_.ws_send_buffer), ec);
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(options_.body_limit);
    auto self = shared_from_this();
    auto upgrade = std::make_shared<http::request<http::string_body>>(std::move(req));
    ws_.async_accept(*upgrade, [self, upgrade](beast::error_code ec) { self->on_accept(ec); });
  }

 private:
  void on_accept(beast::error_code ec) {
    if (ec) return;
    std::weak_ptr<WsSession> weak = shared_from_this();
    connection_ = api_.open_connection([weak](std::string text) {
      if (auto self = weak.lock()) self->send(std::move(text));
    });
    read();
  }

  void read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) {  // closed, reset, or a frame over the limit
        self->api_.close_connection(self->connection_);
        return;
      }
      const std::string text = beast::buffers_to_string(self->buffer_.data());
      self->buffer_.consume(self->buffer_.size());
      self->deliver(text);
      // A client that sends without reading waits: its next action is read
      // once the answers queued for it are down to half the bound again.
      if (self->queue_.size() >= self->options_.ws_max_queued)
        self->reading_paused_ = true;
      else
        self->read();
    });
  }

  /// Hands a message to the Api. Nothing it throws may leave this handler
  /// (it would end the I/O thread and with it the server): the last resort
  /// logs the fault and answers the client with an error message.
  void deliver(const std::string& text) {
    std::string fault;
    try {
      api_.connection_message(connection_, text);
      return;
    } catch (const std::exception& e) {
      fault = e.what();
    } catch (...) {
      fault = "unknown exception";
    }
    std::fprintf(stderr, "codefy serve: a WebSocket message failed unexpectedly: %s\n", fault.c_str());
    nlohmann::json m = {{"type", "error"}, {"error", "internal error handling the message: " + fault}};
    send(m.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }

  void send(std::string text) {
    net::post(ws_.get_executor(), [self = shared_from_this(), text = std::move(text)]() mutable {
      if (self->queue_.size() >= self->options_.ws_max_queued && is_progress(text)) return;
      self->queue_.push_back(std::move(text));
      if (self->queue_.size() == 1) self->write();
    });
  }

  void write() {
    ws_.text(true);
    ws_.async_write(net::buffer(queue_.front()), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) {  // gone: a paused read resumes, to see the close and stop the connection's run
        if (std::exchange(self->reading_paused_, false)) self->read();
        return;
      }
      self->queue_.pop_front();
      if (self->reading_paused_ && self->queue_.size() <= self->options_.ws_max_queued / 2) {
        self->reading_paused_ = false;
        self->read();
      }
      if (!self->queue_.empty()) self->write();
    });
  }

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  std::deque<std::string> queue_;
  bool reading_paused_ = false;  ///< the client's actions wait until the queue drains
  Api& api_;
  const ServerOptions& options_;
  std::shared_ptr<Connection> connection_;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, Api& api, const ServerOptions& options, Uploads& uploads)
      : stream_(std::move(socket)), api_(api), options_(options), uploads_(uploads) {}
  ~Session() { end_upload(); }

  void run() { net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::read, shared_from_this())); }

 private:
  void read() {
    request_ = Request{};
    head_ = false;
    body_unread_ = true;  // until on_read has the whole body
    header_parser_.emplace();
    header_parser_->header_limit(32 * 1024);
    header_parser_->body_limit(boost::none);  // decided in on_header, once the route is known
    header_deadline_ = std::chrono::steady_clock::now() + options_.header_timeout;
    // The header first: it decides where the body goes and how large it may be.
    read_header();
  }

  /// Reads the header piece by piece, each piece within the idle timeout,
  /// the whole header by header_deadline_ however steadily it trickles in
  /// (slowloris). Beast's parser takes a header only whole, so the bytes are
  /// read here and offered to it after each read.
  void read_header() {
    while (buffer_.size() > 0 && !header_parser_->is_header_done()) {
      beast::error_code ec;
      const size_t used = header_parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) break;  // not all of it yet
      if (ec) return on_header(ec, 0);          // what is wrong with it (too large, malformed)
      if (used == 0) break;
    }
    if (header_parser_->is_header_done()) return on_header({}, 0);
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(header_deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) return close();
    stream_.expires_after(std::min(left, options_.read_timeout));
    stream_.async_read_some(buffer_.prepare(8192), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->buffer_.commit(n);
      if (ec) return self->on_header(ec, 0);  // closed, reset or quiet: on_header closes
      self->read_header();
    });
  }

  void on_header(beast::error_code ec, std::size_t) {
    if (ec == http::error::header_limit) {
      keep_alive_ = false;
      return write(Response::error(431, "request headers too large"));
    }
    if (const std::string why = ec ? bad_request(ec, header_parser_->get())
                                   : framing_problem(header_parser_->get(), header_parser_->chunked());
        !why.empty()) {
      keep_alive_ = false;  // the body's length is unknown: nothing after this header can be read as a request
      return write(Response::error(400, why));
    }
    if (ec) return close();  // end of stream, timeout, reset
    version_ = header_parser_->get().version();
    beast::error_code ep_ec;
    const auto remote = stream_.socket().remote_endpoint(ep_ec);
    request_ = to_request(header_parser_->get().base(), !ep_ec && remote.address().is_loopback());
    // HEAD is answered as GET is, without the body (RFC 9110 9.3.2).
    if (request_.method == "HEAD") {
      head_ = true;
      request_.method = "GET";
    }
    upload_ = api_.streams_body(request_.method, request_.path);  // its route says so (an upload)
    body_limit_ = upload_ ? options_.upload_limit + (64u << 10)   // CodefyUI's multipart envelope allowance
                          : options_.body_limit;
    // Host and token before the body, as CodefyUI: a request that may not
    // come in is never read, spooled or answered 413.
    if (websocket::is_upgrade(header_parser_->get()) && request_.path == "/ws/execution") {
      // A refused upgrade gets 403 at the handshake, as CodefyUI's server
      // answers (accepting, then closing, sends browsers into a reconnect loop).
      if (std::string reason = api_.check_websocket(request_); !reason.empty()) {
        keep_alive_ = false;
        Response refused;
        refused.status = 403;
        refused.content_type = "text/plain; charset=utf-8";
        refused.body = std::move(reason);
        return write(std::move(refused));
      }
    } else if (!websocket::is_upgrade(header_parser_->get())) {
      if (auto denied = api_.check_access(request_)) {
        keep_alive_ = false;
        return write(std::move(*denied));
      }
    }
    if (const auto declared = header_parser_->content_length(); declared && *declared > body_limit_) {
      keep_alive_ = false;  // refused before the body is read
      return write(Response::error(
          413, "request body is " + std::to_string(*declared) + " bytes (max " + std::to_string(body_limit_) + ")"));
    }
    if (beast::iequals(header_parser_->get()[http::field::expect], "100-continue")) {  // curl, requests
      auto res = std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
      auto self = shared_from_this();
      return http::async_write(stream_, *res, [self, res](beast::error_code wec, std::size_t) {
        if (wec) return self->close();
        self->read_body();
      });
    }
    read_body();
  }

  /// Reads the body into memory, or for an upload (a route that streams its
  /// body to disk) into a spool file.
  void read_body() {
    if (upload_ && !options_.spool_dir.empty()) {
      // An upload (up to CODEFYUI_MAX_UPLOAD_SIZE) goes to a file, never whole
      // into memory; a few at a time, so disk use stays bounded too.
      if (uploads_.in_flight.fetch_add(1) >= options_.max_uploads) {
        uploads_.in_flight.fetch_sub(1);
        keep_alive_ = false;
        return write(Response::error(503, "too many uploads at once (" + std::to_string(options_.max_uploads) +
                                              "); try again when one has finished"));
      }
      counting_upload_ = true;
      spool_ = options_.spool_dir / ("upload-" + std::to_string(::getpid()) + "-" + std::to_string(uploads_.next++));
      buffer_.reserve(64u << 10);  // reads of 64 KiB, not of the little header buffer's size (7x faster)
      file_parser_.emplace(std::move(*header_parser_));
      file_parser_->body_limit(body_limit_);
      beast::error_code fec;
      file_parser_->get().body().open(spool_.c_str(), beast::file_mode::write, fec);
      if (fec) {
        keep_alive_ = false;
        spool_.clear();
        return write(Response::error(500, "cannot spool the upload: " + fec.message()));
      }
      return read_body_some(*file_parser_);
    }
    parser_.emplace(std::move(*header_parser_));
    parser_->body_limit(body_limit_);
    read_body_some(*parser_);
  }

  /// Reads the body piece by piece, each within the idle timeout: a slow
  /// upload that keeps sending is never cut off, a stalled one is.
  template <class Parser>
  void read_body_some(Parser& parser) {
    if (parser.is_done()) return on_read({}, 0);  // no body, or all of it came with the header
    stream_.expires_after(options_.read_timeout);
    http::async_read_some(stream_, buffer_, parser,
                          [self = shared_from_this(), &parser](beast::error_code ec, std::size_t n) {
                            if (!ec && !parser.is_done()) return self->read_body_some(parser);
                            self->on_read(ec, n);
                          });
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      return write(Response::error(413, "request body over the limit of " + std::to_string(body_limit_) + " bytes"));
    }
    if (const std::string why = bad_request(ec, file_parser_ ? file_parser_->get().base() : parser_->get().base());
        !why.empty()) {
      keep_alive_ = false;  // a malformed chunk: where the next request would start is unknown
      return write(Response::error(400, why));
    }
    if (ec) return close();  // the client closed, reset or went quiet
    body_unread_ = false;
    keep_alive_ = file_parser_ ? file_parser_->keep_alive() : parser_->keep_alive();
    if (file_parser_) {
      file_parser_->get().body().close();
      request_.body_file = spool_;
    } else {
      request_.body = std::move(parser_->get().body());
    }
    if (!file_parser_ && websocket::is_upgrade(parser_->get()) && request_.path == "/ws/execution") {
      stream_.expires_never();  // the websocket stream keeps its own timeouts
      return std::make_shared<WsSession>(stream_.release_socket(), api_, options_)->run(parser_->release());
    }
    stream_.expires_never();  // a run may take long: the answer comes when it ends
    auto self = shared_from_this();
    on_gone_ = nullptr;
    request_.on_client_gone = [this](std::function<void()> f) { on_gone_ = std::move(f); };  // during handle only
    api_.handle(request_, [self](Response response) {
      net::post(self->stream_.get_executor(),
                [self, response = std::move(response)]() mutable { self->write(std::move(response)); });
    });
    request_.on_client_gone = nullptr;
    if (on_gone_) watch();
  }

  /// While a route's answer is pending: reads from the socket to notice the
  /// client leaving (end of stream, reset) and tells the route once. Bytes
  /// that come instead (a pipelined request) stay in the buffer for the next
  /// read, and the watch ends there.
  void watch() {
    watching_ = true;
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->watching_ = false;
      self->buffer_.commit(n);
      if (self->read_after_watch_) {  // the answer went out meanwhile: on to the next request
        self->read_after_watch_ = false;
        return self->read();
      }
      if (ec && ec != net::error::operation_aborted)
        if (auto gone = std::move(self->on_gone_)) {
          self->on_gone_ = nullptr;
          gone();
        }
    });
  }

  void write(Response r) {
    on_gone_ = nullptr;  // answered: the client leaving now changes nothing
    if (watching_) {     // the watch's read ends (aborted) before the next read starts
      beast::error_code ec;
      stream_.socket().cancel(ec);
    }
    api_.add_cors_headers(request_, r);  // a cross-origin editor may read the answer, refusals included
    end_upload();                        // the upload was handled (or refused): its spooled body goes
    if (!r.file.empty()) {               // streamed from disk, never read whole into memory
      http::file_body::value_type file;
      beast::error_code ec;
      file.open(r.file.c_str(), beast::file_mode::scan, ec);
      if (ec) return write(Response::error(404, "File not found: " + r.file.filename().string()));
      return send(std::make_shared<http::response<http::file_body>>(
                      std::piecewise_construct, std::make_tuple(std::move(file)),
                      std::make_tuple(static_cast<http::status>(r.status), version_)),
                  r);
    }
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), version_);
    res->body() = std::move(r.body);
    send(res, r);
  }

  template <class Message>
  void send(std::shared_ptr<Message> res, const Response& r) {
    res->set(http::field::server, "codefy");
    res->set(http::field::content_type, r.content_type);
    res->set(http::field::cache_control, "no-store");
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    if (head_) {  // the header GET's answer would have, Content-Length included, and no body
      auto header_only = std::make_shared<http::response<http::empty_body>>(std::move(res->base()));
      return write_some(header_only, std::make_shared<http::response_serializer<http::empty_body>>(*header_only));
    }
    write_some(res, std::make_shared<http::response_serializer<typename Message::body_type>>(*res));
  }

  /// Writes the answer piece by piece, each within the idle timeout: a large
  /// download to a slow client that keeps reading is never cut off.
  template <class Message, class Serializer>
  void write_some(std::shared_ptr<Message> res, std::shared_ptr<Serializer> sr) {
    stream_.expires_after(options_.read_timeout);
    http::async_write_some(stream_, *sr, [self = shared_from_this(), res, sr](beast::error_code ec, std::size_t) {
      if (ec) return self->close();
      if (!sr->is_done()) return self->write_some(res, sr);
      if (res->need_eof()) return self->body_unread_ ? self->linger() : self->close();
      if (self->watching_) return void(self->read_after_watch_ = true);  // the watch's end reads on
      self->read();
    });
  }

  /// Half-closes (the answer is complete), then reads and drops what the
  /// client still sends until it closes or a bound is reached, then closes.
  void linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    end_upload();
    buffer_.consume(buffer_.size());
    linger_until_ = std::chrono::steady_clock::now() + options_.linger_total;
    drained_ = 0;
    drain();
  }

  void drain() {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(linger_until_ - std::chrono::steady_clock::now());
    if (left.count() <= 0 || drained_ >= options_.linger_bytes) return close();
    stream_.expires_after(std::min(left, options_.linger_idle));
    drop_.resize(64u << 10);
    stream_.async_read_some(net::buffer(drop_), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      self->drained_ += n;
      if (ec) return self->close();  // the client closed (end of stream), went quiet, or reset
      self->drain();
    });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
    end_upload();
  }

  /// Forgets the upload being received, if any: its spool file goes and it no longer counts.
  void end_upload() {
    file_parser_.reset();
    if (!spool_.empty()) {
      std::error_code ignored;
      std::filesystem::remove(spool_, ignored);
      spool_.clear();
    }
    if (counting_upload_) uploads_.in_flight.fetch_sub(1);
    counting_upload_ = false;
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> header_parser_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::request_parser<http::file_body>> file_parser_;
  Request request_;               ///< the request being read: built from its header, then given its body
  std::filesystem::path spool_;   ///< the upload being received, removed once answered
  bool counting_upload_ = false;  ///< this session holds one of the upload slots
  Api& api_;
  const ServerOptions& options_;
  Uploads& uploads_;
  bool keep_alive_ = false;
  bool head_ = false;  ///< the request is a HEAD, asked as GET: its answer goes without a body
  unsigned version_ = 11;
  size_t body_limit_ = 0;     ///< the limit of the request being read
  bool upload_ = false;       ///< the request being read is an upload: its route streams the body to disk
  bool body_unread_ = false;  ///< the request being answered was refused before its body was read (whole)
  std::chrono::steady_clock::time_point header_deadline_;  ///< when the request header being read must be complete
  std::chrono::steady_clock::time_point linger_until_;     ///< when lingering after a refusal ends at the latest
  size_t drained_ = 0;                                     ///< bytes read and dropped while lingering
  std::vector<char> drop_;                                 ///< where they are read to
  std::function<void()> on_gone_;  ///< what the pending answer's route does if the client leaves first
  bool watching_ = false;          ///< a watch() read is pending
  bool read_after_watch_ = false;  ///< the answer went out during the watch: its end starts the next read
};

}  // namespace

struct HttpServer::Impl {
  // The acceptor on a strand: its accept handler (which arms the next
  // accept) and stop()'s close never run at once on two I/O threads.
  Impl(ServerOptions o, Api& a)
      : options(std::move(o)), api(a), ioc(options.io_threads), acceptor(net::make_strand(ioc)) {}

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (!ec) std::make_shared<Session>(std::move(socket), api, options, uploads)->run();
      if (acceptor.is_open()) accept();
    });
  }

  /// Runs I/O handlers until the server stops. A handler that throws ends
  /// only its own connection: the thread logs it and goes back to work
  /// (Asio lets run() be called again at once after an exception).
  void run_io() {
    for (;;) {
      try {
        ioc.run();
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "codefy serve: a connection failed unexpectedly: %s\n", e.what());
      } catch (...) {
        std::fprintf(stderr, "codefy serve: a connection failed unexpectedly: unknown exception\n");
      }
    }
  }

  ServerOptions options;
  Api& api;
  Uploads uploads;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
};

HttpServer::HttpServer(ServerOptions options, Api& api) : impl_(std::make_unique<Impl>(std::move(options), api)) {}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::start() {
  beast::error_code ec;
  const auto address = net::ip::make_address(impl_->options.host, ec);
  if (ec) throw std::runtime_error("cannot use host \"" + impl_->options.host + "\": " + ec.message());
  const tcp::endpoint endpoint(address, impl_->options.port);
  auto& acc = impl_->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + impl_->options.host + ":" + std::to_string(impl_->options.port) +
                             ": " + ec.message());
  if (const auto& spool = impl_->options.spool_dir; !spool.empty()) {  // a crash may have left some behind
    std::filesystem::create_directories(spool);
    for (const auto& e : std::filesystem::directory_iterator(spool))
      if (e.path().filename().string().rfind("upload-", 0) == 0) std::filesystem::remove(e.path());
  }
  const uint16_t port = acc.local_endpoint().port();
  impl_->api.listen_on(impl_->options.host, port);
  impl_->accept();
  for (int i = 0; i < std::max(1, impl_->options.io_threads); ++i)
    impl_->threads.emplace_back([this] { impl_->run_io(); });
  return port;
}

void HttpServer::stop() {
  if (!impl_) return;
  net::post(impl_->acceptor.get_executor(), [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  impl_->ioc.stop();
  for (auto& t : impl_->threads)
    if (t.joinable()) t.join();
  impl_->threads.clear();
}

}  // namespace codefy::server
