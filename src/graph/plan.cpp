#include "graph/plan.h"

#include <map>
#include <queue>

namespace codefy::graph {

Plan make_plan(const Graph& g) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i) index[g.nodes[i].id] = i;
  const size_t n = g.nodes.size();
  std::vector<std::vector<size_t>> out(n), in_data(n);
  for (const auto& e : g.edges) {
    auto s = index.find(e.source), t = index.find(e.target);
    if (s == index.end() || t == index.end()) continue;  // validation reports it
    out[s->second].push_back(t->second);
    if (e.kind == EdgeKind::kData) in_data[t->second].push_back(s->second);
  }

  // Forward from every Start, then every node those take data from.
  std::vector<bool> member(n, false);
  std::vector<size_t> stack;
  for (size_t i = 0; i < n; ++i)
    if (g.nodes[i].type == "Start") stack.push_back(i);
  while (!stack.empty()) {
    size_t v = stack.back();
    stack.pop_back();
    if (member[v]) continue;
    member[v] = true;
    for (size_t w : out[v]) stack.push_back(w);
  }
  for (size_t i = 0; i < n; ++i)
    if (member[i]) stack.push_back(i);
  std::vector<bool> seen = member;
  while (!stack.empty()) {
    size_t v = stack.back();
    stack.pop_back();
    member[v] = true;
    for (size_t u : in_data[v])
      if (!seen[u]) seen[u] = true, stack.push_back(u);
  }

  // Kahn's algorithm over members; ties by file position for a stable order.
  std::vector<int> indegree(n, 0);
  for (size_t v = 0; v < n; ++v)
    if (member[v])
      for (size_t w : out[v])
        if (member[w]) ++indegree[w];
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t v = 0; v < n; ++v)
    if (member[v] && indegree[v] == 0) ready.push(v);
  Plan plan;
  std::vector<bool> placed(n, false);
  while (!ready.empty()) {
    size_t v = ready.top();
    ready.pop();
    placed[v] = true;
    plan.order.push_back(g.nodes[v].id);
    for (size_t w : out[v])
      if (member[w] && --indegree[w] == 0) ready.push(w);
  }
  for (size_t v = 0; v < n; ++v) {
    if (!member[v]) continue;
    plan.members.insert(g.nodes[v].id);
    if (!placed[v]) plan.cyclic.push_back(g.nodes[v].id);
  }
  return plan;
}

}  // namespace codefy::graph
