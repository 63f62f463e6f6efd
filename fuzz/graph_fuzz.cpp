// graph.json as POST /api/graph/validate and `codefy validate` read it:
// parse, expand presets, validate against the node library, trace the
// SequentialModels' layers. Bad input may only be refused as the server's
// error handling expects (GraphFormatError, invalid_argument: a 400;
// ValidationError: the issues). What parses must also survive a save and a
// reload unchanged.
#include "engine/executor.h"
#include "fuzz/fuzz_targets.h"
#include "graph/graph.h"
#include "graph/validate.h"
#include "nodes/library.h"

#include <stdexcept>

namespace codefy::fuzz {

void graph(std::string_view data) {
  static const NodeRegistry& registry = nodes::builtin();
  graph::Graph g;
  try {
    g = graph::parse_graph(std::string(data), "fuzz");
  } catch (const graph::GraphFormatError&) {
    return;
  } catch (const std::invalid_argument&) {
    return;
  }

  // A graph that was read is written back and read again the same (a save
  // and a load of the editor, the route /api/graph/save then /load).
  const graph::json saved = graph::to_json(g);
  const graph::json again = graph::to_json(graph::graph_from_json(saved, "fuzz (saved)"));
  check(saved == again, "a saved graph reads back differently:\n" + saved.dump() + "\n" + again.dump());

  try {
    prepare(g, registry, Checks::kValidate);
  } catch (const graph::ValidationError& e) {
    check(!e.issues().empty(), "ValidationError without issues");
    // As the route answers them.
    (void)graph::issues_json(e.issues()).dump(-1, ' ', false, graph::json::error_handler_t::replace);
  } catch (const graph::GraphFormatError&) {  // 400, as the server answers it
  } catch (const std::invalid_argument&) {    // 400 too
  }
}

}  // namespace codefy::fuzz
