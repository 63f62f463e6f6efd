// What a route sees and answers, free of sockets: a request (its body in
// memory or spooled to a file), a response (JSON, or a file streamed from
// disk), and the error a route throws to answer something other than 200.
#pragma once

#include "util/errors.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace codefy::server {

/// One HTTP request as the API sees it.
struct Request {
  std::string method;  ///< "GET", "POST", ...
  std::string path;    ///< without the query string, percent-decoded
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  ///< names lower-case
  std::string body;
  /// Where a large body (an upload) was spooled instead of `body`; the server removes it after answering.
  std::filesystem::path body_file;
  bool from_loopback = false;
  /// Set by the server: a route that answers later calls it, while it
  /// handles the request (on its thread), with what to do if the client
  /// closes its connection before the answer is sent (the callback runs once,
  /// on an I/O thread). Empty when nothing watches the connection (tests, WebSocket).
  std::function<void(std::function<void()> on_gone)> on_client_gone;
  /// A header's value, "" when absent.
  std::string header(const std::string& lower_name) const;
  /// The body as JSON, an empty object when there is none. Throws
  /// nlohmann::json::parse_error (answered 400).
  nlohmann::json json_body() const;
};

/// One HTTP answer.
struct Response {
  int status = 200;
  std::string body;
  /// When set, the body is this file's content, streamed from disk (downloads).
  std::filesystem::path file;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;
  /// A JSON body; invalid UTF-8 in strings is replaced, never thrown about.
  static Response json(int status, const nlohmann::json& j);
  /// FastAPI's error shape: {"detail": message}.
  static Response error(int status, const std::string& message);
};

/// Delivers the one answer to a request; may be called from any thread.
using Respond = std::function<void(Response)>;

/// An answer other than 200, with CodefyUI's detail text: routes throw it,
/// Api::handle answers it as Response::error(status(), what()).
class HttpError : public Error {
 public:
  HttpError(int status, const std::string& detail) : Error(detail), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

}  // namespace codefy::server
