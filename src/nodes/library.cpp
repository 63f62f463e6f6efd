#include "nodes/library.h"

namespace codefy::nodes {

const NodeRegistry& builtin() {
  static const NodeRegistry registry = [] {
    NodeRegistry r;
    register_utility_nodes(r);
    register_data_nodes(r);
    register_model_nodes(r);
    register_training_nodes(r);
    register_io_nodes(r);
    register_layer_nodes(r);
    register_data_table_nodes(r);
    register_classic_nodes(r);
    register_tensor_nodes(r);
    register_generative_nodes(r);
    register_transform_nodes(r);
    register_series_nodes(r);
    register_edu_foundations_nodes(r);
    register_edu_rl_nodes(r);
    register_edu_deep_nodes(r);
    return r;
  }();
  return registry;
}

}  // namespace codefy::nodes
