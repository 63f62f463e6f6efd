// CodefyUI's v2 layer spec (`{"version":2, nodes, edges}`) in three steps:
// parse the JSON into a LayerGraph, build each layer's module from its
// params, connect the nodes into an evaluation order. build_sequential_model
// runs them in that order and assembles the model.
#pragma once

#include "model/layer_table.h"

#include <torch/nn/module.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace codefy::model {

/// A port of the Input or Output node.
struct SpecPort {
  std::string id, name;
};

/// One node of a spec as written: a boundary (Input, Output), a layer or a merge.
struct SpecNode {
  std::string id, type;
  nlohmann::json params;        ///< as given; null when absent
  std::vector<SpecPort> ports;  ///< Input and Output only: exactly one
};

/// One edge, its ends resolved to node indices.
struct SpecEdge {
  std::string label;  ///< for messages: `edge "e3" (a -> b)`
  size_t source, target;
  std::optional<std::string> source_handle, target_handle;
};

/// A spec whose JSON is well formed: unique ids without '.', one Input and
/// one Output with one port each, edges between existing nodes. Says nothing
/// yet about layer types, params or whether the edges make sense.
struct LayerGraph {
  std::vector<SpecNode> nodes;   ///< in the spec's order (the parameters' order)
  std::vector<SpecEdge> edges;   ///< in the spec's order (a merge's input order)
  size_t input = 0, output = 0;  ///< indices of the Input and Output nodes
};

/// Reads a v2 spec, given as a JSON object or as the JSON string CodefyUI
/// stores in the `layers` param. Throws LayerSpecError.
LayerGraph parse_layer_spec(const nlohmann::json& spec);

/// What one layer or merge node became.
struct BuiltNode {
  std::shared_ptr<torch::nn::Module> module;  ///< layers only
  LayerFn layer;                              ///< set for layers
  MergeFn merge;                              ///< set for merges
  /// A layer's module as printed ("Conv2d(1, 32, ...)"); a merge's options
  /// that follow its input names in describe() (", dim=1"), often empty.
  std::string description;
};

/// Builds every layer and merge from its type and params, in node-list order
/// (parameters come from LibTorch's global RNG in that order). The result is
/// indexed like graph.nodes; the Input and Output entries stay empty. Throws
/// LayerSpecError for an unknown type or a bad param.
std::vector<BuiltNode> build_layers(const LayerGraph& graph);

/// Builds the one layer or merge node `graph.nodes[index]` (not a boundary).
/// Throws LayerSpecError as build_layers does.
BuiltNode build_node(const LayerGraph& graph, size_t index);

/// How data flows from the Input to the Output.
struct Wiring {
  std::vector<size_t> order;                ///< layer and merge nodes in evaluation order
  std::vector<std::vector<size_t>> inputs;  ///< per node: the nodes it reads, in edge-list order
  size_t output_source = 0;                 ///< the node the Output reads
};

/// Orders the nodes as CodefyUI does (Kahn's algorithm, FIFO, node-list order)
/// and checks the connections: no cycle, the boundary handles, the Input used,
/// one edge into the Output, one input per layer and the right number per
/// merge. Throws LayerSpecError.
Wiring connect_layers(const LayerGraph& graph);

}  // namespace codefy::model
