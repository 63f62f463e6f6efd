// The route table: rows of {method, path pattern, handler}, and matching a
// request's method and path against them. A pattern's segments are literals,
// `{name}` (one segment) or, last, `{name...}` (the rest of the path, for
// downloads from folders). An unknown path gets 404; a known path asked with
// another method gets 405 with an Allow header.
#pragma once

#include "server/http_message.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace codefy::server {

/// The named parts of a matched path: `{name}` → its segment, `{name...}` →
/// the rest of the path, its segments joined by '/'.
using PathParams = std::map<std::string, std::string>;

/// Answers a matched request by calling `respond` exactly once, now or later
/// from any thread. It may throw instead, before it responds: Api::handle
/// answers the exception.
using Handler = std::function<void(const Request&, const PathParams&, const Respond&)>;
/// A handler whose answer is ready at once.
using ImmediateHandler = std::function<Response(const Request&, const PathParams&)>;

/// A Handler that answers with what `handler` returns.
Handler answer_now(ImmediateHandler handler);

/// One row of the table.
struct Route {
  std::string method;   ///< "GET", "POST", ...
  std::string pattern;  ///< e.g. "/api/graph/load/{name}", "/api/models/download/{path...}"
  Handler handler;
  /// The body may be large (an upload): the server spools it to a file
  /// (Request::body_file) and allows the upload limit instead of the body limit.
  bool streams_body_to_disk = false;
};

/// What matching one request against the table found.
struct RouteMatch {
  const Route* route = nullptr;  ///< the route to answer with; null when none takes the request
  PathParams params;             ///< the route's named parts
  /// Methods the path has routes for, sorted; empty when the path is unknown.
  std::vector<std::string> allowed;
};

/// The table Api answers requests from; rows are tried in the order added.
class RouteTable {
 public:
  /// Adds a row. Throws std::invalid_argument for a malformed pattern (an
  /// empty `{}`, a `{name...}` before the last segment, a name used twice).
  RouteTable& add(Route route);
  RouteTable& add(std::string method, std::string pattern, Handler handler);
  RouteTable& add(std::string method, std::string pattern, ImmediateHandler handler);

  /// The first row whose method and pattern fit; else, in `allowed`, the
  /// methods the path's rows have.
  RouteMatch match(const std::string& method, const std::string& path) const;
  /// Whether `method` on `path` goes to a row that streams its body to disk.
  bool streams_body_to_disk(const std::string& method, const std::string& path) const;
  /// The answer for a request no row takes: 405 with an Allow header when
  /// the path has rows for other methods, else 404; both {"detail": ...}.
  static Response unrouted(const RouteMatch& match);

  const std::vector<Route>& routes() const { return routes_; }

 private:
  struct Segment {
    std::string text;  ///< the literal, or the part's name
    bool named = false;
    bool tail = false;  ///< `{name...}`: one or more segments to the end
  };
  static bool fits(const std::vector<Segment>& pattern, const std::vector<std::string>& path, PathParams& params);

  std::vector<Route> routes_;
  std::vector<std::vector<Segment>> patterns_;  ///< routes_[i]'s pattern, parsed
};

/// A path's segments: split at '/', empty ones dropped (so "a//b/" is a, b).
std::vector<std::string> split_path(const std::string& path);

}  // namespace codefy::server
