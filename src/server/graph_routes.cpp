// The graph file and example routes.
#include "server/graph_routes.h"

#include "engine/executor.h"
#include "graph/graph.h"
#include "graph/validate.h"
#include "util/atomic_file.h"
#include "util/json_input.h"

#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace codefy::server {

namespace fs = std::filesystem;

std::string sanitize_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    const bool keep = std::isalnum(u) || c == '-' || c == '_' || u >= 0x80;  // UTF-8 letters stay, as str.isalnum
    out += keep ? c : '_';
  }
  return out;
}

namespace {

/// A JSON file's contents, parsed within the same limits as a request body.
nlohmann::json read_json_file(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return util::parse_json(text.str());
}

/// The files, sorted, each with its parsed JSON; unreadable ones are skipped, as CodefyUI does.
std::vector<std::pair<fs::path, nlohmann::json>> read_json_files(std::vector<fs::path> files) {
  std::sort(files.begin(), files.end());
  std::vector<std::pair<fs::path, nlohmann::json>> out;
  for (auto& f : files) {
    try {
      out.emplace_back(f, read_json_file(f));
    } catch (const util::JsonInputError&) {  // not JSON, or nested past the limit: not listed
    }
  }
  return out;
}

/// A graph as saved: indented for people to read and diff, unless the indentation would make the
/// file much larger than the graph itself (deep nesting): then compact, so a small body never
/// becomes a large file.
std::string saved_text(const nlohmann::json& graph) {
  std::string pretty = graph.dump(2);
  std::string compact = graph.dump();
  return (pretty.size() <= 4 * compact.size() + 4096 ? std::move(pretty) : std::move(compact)) + "\n";
}

/// `answer`, after giving the memory a large request's graph took back to
/// the system: glibc keeps freed memory in its arenas otherwise, and a few
/// large validations would leave the server hundreds of MB larger.
Response after_trimming(const Request& r, Response answer) {
  if (r.body.size() >= (1u << 20)) ::malloc_trim(0);
  return answer;
}

}  // namespace

GraphRoutes::GraphRoutes(fs::path graphs_dir, fs::path examples_dir, const NodeRegistry& registry)
    : graphs_dir_(std::move(graphs_dir)), examples_dir_(std::move(examples_dir)), registry_(registry) {
  fs::create_directories(graphs_dir_);
}

void GraphRoutes::add_routes(RouteTable& table) {
  table.add("POST", "/api/graph/validate", validations_.run_here([this](const Request& r, const PathParams&) {
    return after_trimming(r, validate(r));
  }));
  table.add("POST", "/api/graph/save",
            saves_.run_here([this](const Request& r, const PathParams&) { return after_trimming(r, save(r)); }));
  table.add("GET", "/api/graph/load/{name}",
            [this](const Request&, const PathParams& p) { return load(p.at("name")); });
  table.add("GET", "/api/graph/list", [this](const Request&, const PathParams&) { return list(); });
  table.add("GET", "/api/examples/list", [this](const Request&, const PathParams&) { return examples_list(); });
  table.add("GET", "/api/examples/load", [this](const Request& r, const PathParams&) { return example_load(r); });
}

Response GraphRoutes::validate(const Request& r) const {
  try {
    prepare(graph::graph_from_json(r.json_body(), "request"), registry_, Checks::kValidate);
    return Response::json(200,
                          {{"valid", true}, {"errors", nlohmann::json::array()}, {"issues", nlohmann::json::array()}});
  } catch (const graph::ValidationError& e) {
    nlohmann::json errors = nlohmann::json::array();
    for (const auto& i : e.issues()) errors.push_back(i.message);
    return Response::json(200, {{"valid", false}, {"errors", errors}, {"issues", graph::issues_json(e.issues())}});
  }
}

Response GraphRoutes::save(const Request& r) const {
  nlohmann::json body = r.json_body();
  if (!body.is_object()) return Response::error(400, "expected a graph JSON object");
  std::string target = util::string_field(body, "file").value_or("");
  const bool has_file = !target.empty();
  if (target.empty()) target = util::string_field(body, "name").value_or("");
  if (target.empty()) return Response::error(400, "the graph needs a \"name\" (or a \"file\") to be saved under");
  const std::string stem = sanitize_name(target);
  const fs::path path = graphs_dir_ / (stem + ".json");
  const bool no_overwrite = !util::bool_field(body, "overwrite").value_or(true);
  if (no_overwrite && !has_file && fs::exists(path)) {
    std::string stored = stem;
    try {
      const nlohmann::json old = read_json_file(path);
      if (old.is_object()) stored = old.value("name", stem);
    } catch (const std::exception&) {  // unreadable: named by its file
    }
    return Response::json(409, {{"detail", {{"error", "graph_exists"}, {"file", stem}, {"name", stored}}}});
  }
  body.erase("file");
  body.erase("overwrite");
  graph::graph_from_json(body, stem);  // a graph file at all (throws GraphFormatError → 400)
  util::write_file_atomic(path, saved_text(body));
  return Response::json(200, {{"message", "Graph saved"}, {"path", fs::absolute(path).string()}, {"file", stem}});
}

Response GraphRoutes::load(const std::string& name) const {
  const fs::path file = graphs_dir_ / (sanitize_name(name) + ".json");
  if (name.empty() || !fs::exists(file)) return Response::error(404, "Graph '" + name + "' not found");
  return Response::json(200, read_json_file(file));
}

Response GraphRoutes::list() const {
  nlohmann::json list = nlohmann::json::array();
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(graphs_dir_))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  for (const auto& [f, j] : read_json_files(std::move(files))) {
    // Unix seconds, as CodefyUI (os.stat's st_mtime); read from stat() since
    // std::filesystem's file clock counts from another epoch.
    struct stat st {};
    const double mtime =
        ::stat(f.c_str(), &st) == 0 ? static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec * 1e-9 : 0.0;
    const auto name = j.is_object() ? j.find("name") : j.end();
    list.push_back({{"name", name != j.end() && name->is_string() ? name->get<std::string>() : f.stem().string()},
                    {"file", f.stem().string()},
                    {"modified", mtime}});
  }
  return Response::json(200, list);
}

Response GraphRoutes::examples_list() const {
  nlohmann::json list = nlohmann::json::array();
  if (examples_dir_.empty() || !fs::is_directory(examples_dir_)) return Response::json(200, list);
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(examples_dir_))
    if (e.is_regular_file() && e.path().filename() == "graph.json") files.push_back(e.path());
  for (const auto& [f, j] : read_json_files(std::move(files))) {
    const std::string rel = fs::relative(f.parent_path(), examples_dir_).generic_string();
    const size_t slash = rel.find('/');
    try {
      list.push_back({{"name", j.value("name", rel)},
                      {"description", j.value("description", "")},
                      {"category", slash == std::string::npos ? "Other" : rel.substr(0, slash)},
                      {"path", rel},
                      {"source", "builtin"},
                      {"node_count", j.contains("nodes") ? j["nodes"].size() : 0},
                      {"edge_count", j.contains("edges") ? j["edges"].size() : 0}});
    } catch (const nlohmann::json::exception&) {  // not a graph (an array, a number for a name): skipped
    }
  }
  return Response::json(200, list);
}

std::optional<fs::path> example_folder(const fs::path& examples_dir, const std::string& path) {
  // CodefyUI's checks: a relative path, no "..", and nothing outside the folder.
  if (path.empty() || path.find("..") != std::string::npos || path.front() == '/' || path.front() == '\\')
    throw std::invalid_argument("Invalid path");
  const fs::path root = fs::weakly_canonical(examples_dir);
  const fs::path file = fs::weakly_canonical(root / path / "graph.json");
  const std::string root_text = root.string(), file_text = file.string();
  if (file_text.compare(0, root_text.size(), root_text) != 0) throw std::invalid_argument("Invalid path");
  if (examples_dir.empty() || !fs::is_regular_file(file)) return std::nullopt;
  return file.parent_path();
}

Response GraphRoutes::example_load(const Request& r) const {
  const auto it = r.query.find("path");
  if (it == r.query.end()) return Response::error(422, "the query parameter \"path\" is required");
  const std::string& path = it->second;
  std::optional<fs::path> folder;
  try {
    folder = example_folder(examples_dir_, path);
  } catch (const std::invalid_argument&) {
    return Response::error(400, "Invalid path");
  }
  if (!folder) return Response::error(404, "Example not found: " + path);
  return Response::json(200, read_json_file(*folder / "graph.json"));
}

}  // namespace codefy::server
