// `codefy export`: a SequentialModel's layer spec and trained weights out of
// Codefy, as a standalone model.py beside the weights (plain PyTorch) or as
// a TorchScript file (torch.jit.load in Python, torch::jit::load in C++).
#include "cli/commands.h"

#include "graph/graph.h"
#include "model/export_source.h"
#include "model/export_torchscript.h"
#include "model/sequential_model.h"
#include "train/serialize.h"
#include "train/state_dict.h"
#include "util/atomic_file.h"
#include "util/json_input.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace codefy::cli {

namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The layer spec: a spec file's, or the graph's SequentialModel's (the one named by --node when it has several).
nlohmann::json layer_spec(const ExportCommand& cmd) {
  if (!cmd.spec_path.empty()) return util::parse_json(read_text(cmd.spec_path));
  const graph::Graph g = graph::load_graph_file(cmd.graph_path);
  std::vector<const graph::NodeSpec*> models;
  for (const auto& n : g.nodes)
    if (n.type == "SequentialModel" && (cmd.node_id.empty() || n.id == cmd.node_id)) models.push_back(&n);
  std::string ids;
  for (const auto& n : g.nodes)
    if (n.type == "SequentialModel") ids += (ids.empty() ? "" : ", ") + n.id;
  if (models.empty())
    throw std::invalid_argument("graph \"" + g.name + "\" has no SequentialModel node" +
                                (cmd.node_id.empty() ? std::string() : " with id \"" + cmd.node_id + "\"") +
                                (ids.empty() ? std::string() : " (it has: " + ids + ")"));
  if (models.size() > 1)
    throw std::invalid_argument("graph \"" + g.name + "\" has several SequentialModel nodes (" + ids +
                                "): name one with --node");
  const graph::NodeSpec* found = models.front();
  const auto layers = found->params.find("layers");
  if (layers == found->params.end())
    throw std::invalid_argument("node \"" + found->id + "\" (SequentialModel) has no \"layers\" spec");
  return *layers;
}

}  // namespace

int export_model(const ExportCommand& cmd) {
  try {
    if (cmd.format != "pytorch" && cmd.format != "torchscript")
      throw std::invalid_argument("--format \"" + cmd.format + "\": expected pytorch or torchscript");
    const nlohmann::json spec = layer_spec(cmd);
    auto model = model::build_sequential_model(spec);
    const train::StateDict weights = train::load_weights(cmd.weights_path);
    train::load_state_dict(*model, weights);  // names and shapes must be the spec's
    model->eval();
    fs::create_directories(cmd.out_dir);
    nlohmann::json written = nlohmann::json::array();
    if (cmd.format == "pytorch") {
      const fs::path source = fs::path(cmd.out_dir) / "model.py", pt = fs::path(cmd.out_dir) / "weights.pt";
      util::write_file_atomic(source, model::pytorch_source(spec));
      train::save_weights(pt, train::state_dict(*model));  // a .pt Python's torch.load reads, whatever came in
      written = {source.string(), pt.string()};
    } else {
      const fs::path file = fs::path(cmd.out_dir) / "model.torchscript.pt";
      model::save_torchscript(spec, *model, file);
      written = {file.string()};
    }
    if (cmd.json) {
      std::printf("%s\n", nlohmann::json{{"format", cmd.format}, {"written", written}}.dump().c_str());
    } else {
      for (const auto& f : written) std::printf("wrote %s\n", f.get<std::string>().c_str());
      if (cmd.format == "pytorch")
        std::printf("in Python: from model import Model; m = Model(); m.load_state_dict(torch.load(\"weights.pt\"))\n");
      else
        std::printf("in Python: m = torch.jit.load(\"model.torchscript.pt\"); in C++: torch::jit::load(...)\n");
    }
    return kExitOk;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitUsage;
  }
}

}  // namespace codefy::cli
