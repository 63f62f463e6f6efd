// The route table and its matching.
#include "server/routes.h"

#include "util/text.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace codefy::server {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    if (slash > start) parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

Handler answer_now(ImmediateHandler handler) {
  return [handler = std::move(handler)](const Request& r, const PathParams& p, const Respond& respond) {
    respond(handler(r, p));
  };
}

RouteTable& RouteTable::add(Route route) {
  std::vector<Segment> segments;
  std::set<std::string> names;
  const auto parts = split_path(route.pattern);
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    Segment s;
    if (p.size() >= 2 && p.front() == '{' && p.back() == '}') {
      s.named = true;
      s.text = p.substr(1, p.size() - 2);
      if (s.text.size() > 3 && s.text.compare(s.text.size() - 3, 3, "...") == 0) {
        s.tail = true;
        s.text.resize(s.text.size() - 3);
      }
      const auto bad = [&](const std::string& why) {
        return std::invalid_argument("route pattern \"" + route.pattern + "\": " + why);
      };
      if (s.text.empty() || s.text.find_first_of("{}.") != std::string::npos) throw bad("a part needs a plain name");
      if (s.tail && i + 1 != parts.size()) throw bad("{" + s.text + "...} must be the last segment");
      if (!names.insert(s.text).second) throw bad("the name \"" + s.text + "\" is used twice");
    } else {
      s.text = p;
    }
    segments.push_back(std::move(s));
  }
  routes_.push_back(std::move(route));
  patterns_.push_back(std::move(segments));
  return *this;
}

RouteTable& RouteTable::add(std::string method, std::string pattern, Handler handler) {
  return add(Route{std::move(method), std::move(pattern), std::move(handler), false});
}

RouteTable& RouteTable::add(std::string method, std::string pattern, ImmediateHandler handler) {
  return add(Route{std::move(method), std::move(pattern), answer_now(std::move(handler)), false});
}

bool RouteTable::fits(const std::vector<Segment>& pattern, const std::vector<std::string>& path, PathParams& params) {
  params.clear();
  const bool tail = !pattern.empty() && pattern.back().tail;
  if (tail ? path.size() < pattern.size() : path.size() != pattern.size()) return false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const Segment& s = pattern[i];
    if (s.tail) {
      params[s.text] =
          util::join(std::vector<std::string>(path.begin() + static_cast<std::ptrdiff_t>(i), path.end()), "/");
    } else if (s.named) {
      params[s.text] = path[i];
    } else if (s.text != path[i]) {
      return false;
    }
  }
  return true;
}

RouteMatch RouteTable::match(const std::string& method, const std::string& path) const {
  const auto parts = split_path(path);
  RouteMatch m;
  std::set<std::string> allowed;
  PathParams params;
  for (size_t i = 0; i < routes_.size(); ++i) {
    if (!fits(patterns_[i], parts, params)) continue;
    if (routes_[i].method == method) {
      m.route = &routes_[i];
      m.params = std::move(params);
      return m;
    }
    allowed.insert(routes_[i].method);
  }
  m.allowed.assign(allowed.begin(), allowed.end());
  return m;
}

bool RouteTable::streams_body_to_disk(const std::string& method, const std::string& path) const {
  const RouteMatch m = match(method, path);
  return m.route && m.route->streams_body_to_disk;
}

Response RouteTable::unrouted(const RouteMatch& match) {
  if (match.allowed.empty()) return Response::error(404, "Not Found");
  Response r = Response::error(405, "Method Not Allowed");
  std::vector<std::string> allowed = match.allowed;
  if (std::find(allowed.begin(), allowed.end(), "GET") != allowed.end()) allowed.push_back("HEAD");  // as GET
  r.headers["Allow"] = util::join(allowed, ", ");
  return r;
}

}  // namespace codefy::server
