// Request and Response helpers.
#include "server/http_message.h"

#include "util/json_input.h"

namespace codefy::server {

std::string Request::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

nlohmann::json Request::json_body() const {
  if (body.empty()) return nlohmann::json::object();
  return util::parse_json(body);
}

Response Response::json(int status, const nlohmann::json& j) {
  Response r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

Response Response::error(int status, const std::string& message) { return json(status, {{"detail", message}}); }

}  // namespace codefy::server
