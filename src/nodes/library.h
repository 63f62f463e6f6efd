// The built-in node library: every family's nodes in one registry.
#pragma once

#include "engine/node.h"

namespace codefy::nodes {

/// Every built-in node type, registered once on first use and read-only afterwards.
const NodeRegistry& builtin();

// One registration function per node family (src/nodes/<family>_nodes.cpp),
// each calling one register_<node>() per node.
void register_utility_nodes(NodeRegistry& r);
void register_data_nodes(NodeRegistry& r);
void register_model_nodes(NodeRegistry& r);
void register_training_nodes(NodeRegistry& r);
void register_io_nodes(NodeRegistry& r);
void register_layer_nodes(NodeRegistry& r);
void register_data_table_nodes(NodeRegistry& r);
void register_classic_nodes(NodeRegistry& r);
void register_tensor_nodes(NodeRegistry& r);
void register_generative_nodes(NodeRegistry& r);
void register_transform_nodes(NodeRegistry& r);
void register_series_nodes(NodeRegistry& r);
// CodefyUI's plugin packs' teaching nodes, under their namespaced names.
void register_edu_foundations_nodes(NodeRegistry& r);
void register_edu_rl_nodes(NodeRegistry& r);
void register_edu_deep_nodes(NodeRegistry& r);

}  // namespace codefy::nodes
