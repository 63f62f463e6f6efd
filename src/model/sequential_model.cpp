// build_sequential_model: parse, build, connect, then assemble the GraphModel.
//
// This mirrors CodefyUI's `build_graph_model`: layers are registered in a
// ModuleDict keyed by node id in node-list order, and the forward pass
// evaluates the nodes in Kahn topological order.
#include "model/sequential_model.h"

#include "model/graph_model.h"
#include "model/layer_spec.h"
#include "util/text.h"

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <utility>

namespace codefy::model {

train::ModelPtr build_sequential_model(const nlohmann::json& spec) {
  const LayerGraph graph = parse_layer_spec(spec);
  std::vector<BuiltNode> built = build_layers(graph);
  const Wiring wiring = connect_layers(graph);

  // Node-list order: the ModuleDict's order, hence parameters() order.
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> modules;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (built[i].module) modules.emplace_back(graph.nodes[i].id, built[i].module);

  std::vector<Step> steps;
  for (size_t i : wiring.order) {
    const SpecNode& node = graph.nodes[i];
    BuiltNode& b = built[i];
    Step step{node.id, node.type, i, wiring.inputs[i], std::move(b.layer), std::move(b.merge), b.description};
    step.channels_last = node.type == "Conv2d" || node.type == "MaxPool2d" || node.type == "AvgPool2d";
    step.conv = std::dynamic_pointer_cast<torch::nn::Conv2dImpl>(b.module);
    if (auto linear = std::dynamic_pointer_cast<torch::nn::LinearImpl>(b.module)) {
      step.linear_size = linear->weight.numel();
      step.linear = std::move(linear);
    }
    if (step.merge) {
      std::vector<std::string> sources;
      for (size_t s : step.inputs) sources.push_back(graph.nodes[s].id);
      step.description = node.type + "(" + util::join(sources, ", ") + b.description + ")";
    }
    steps.push_back(std::move(step));
  }
  return std::make_shared<GraphModel>(modules, std::move(steps), graph.nodes.size(), graph.input, wiring.output_source);
}

}  // namespace codefy::model
