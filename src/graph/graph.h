// A graph file in memory: CodefyUI's graph.json, with unknown keys kept.
#pragma once

#include "graph/types.h"
#include "util/errors.h"

#include <filesystem>
#include <string>
#include <vector>

namespace codefy::graph {

/// How an edge connects: data flows along kData, kTrigger only orders/enables.
enum class EdgeKind { kData, kTrigger };

/// One node of a graph file.
struct NodeSpec {
  std::string id;
  std::string type;
  json params = json::object();           ///< data.params
  json internal_params = json::object();  ///< data.internalParams (presets)
  json raw = json::object();              ///< the whole node as read, for round trips
  /// For nodes made by preset expansion: the preset node's id, else empty.
  std::string preset_id;
};

/// One edge of a graph file.
struct EdgeSpec {
  std::string id;
  std::string source;
  std::string target;
  std::string source_handle;
  std::string target_handle;
  EdgeKind kind = EdgeKind::kData;
  json raw = json::object();
};

/// A graph: what `graph.json` holds, plus where it came from.
struct Graph {
  std::string name;
  std::string description;
  std::vector<NodeSpec> nodes;
  std::vector<EdgeSpec> edges;
  json raw = json::object();
  /// Folder against which relative file paths in params resolve.
  std::filesystem::path base_dir;

  const NodeSpec* node(const std::string& id) const;
  NodeSpec* node(const std::string& id);
};

/// The most nodes and edges a graph may have (a file, a request, an editor
/// run): far past any graph people build, and small enough that checking
/// one takes well under a second.
constexpr size_t kMaxNodes = 10000;
constexpr size_t kMaxEdges = 50000;

/// Thrown for a graph file that cannot be read as a graph at all.
class GraphFormatError : public Error {
 public:
  using Error::Error;
};

/// Reads a graph from JSON text; `source` names it in errors (a path or "<request>").
Graph parse_graph(const std::string& text, const std::string& source);
/// Reads a graph from a JSON value. Throws GraphFormatError naming the
/// limit for more than kMaxNodes nodes or kMaxEdges edges.
Graph graph_from_json(const json& j, const std::string& source);
/// Reads a graph file; base_dir becomes the file's folder.
Graph load_graph_file(const std::filesystem::path& path);
/// Writes CodefyUI's graph.json shape, keeping unknown keys as they were read.
json to_json(const Graph& g);
/// Saves a graph file atomically.
void save_graph_file(const Graph& g, const std::filesystem::path& path);

}  // namespace codefy::graph
