// What the tabular and classical nodes pass along: feature matrices (2-D
// tensors) and lists of labels (JSON arrays of strings, as CodefyUI's
// string class labels), read with errors that name the port and the shapes.
#pragma once

#include "engine/node.h"

#include <string>
#include <vector>

namespace codefy::nodes {

/// A tensor's shape as "[150, 4]".
std::string shape_text(const torch::Tensor& t);

/// Input `port` as a float32 CPU matrix [N, F]; fails naming the port and
/// the shape it got when it is not a 2-D tensor.
torch::Tensor read_matrix(const NodeContext& ctx, const std::string& port);

/// Input `port` as labels: a list (strings kept, numbers written as Python
/// writes them, so 1 and "1" agree) or a 1-D tensor.
std::vector<std::string> read_labels(const NodeContext& ctx, const std::string& port);

/// Fails unless `labels` has one entry per row of `features`, naming both ports and both sizes.
void check_rows(const torch::Tensor& features, const std::string& features_port, size_t labels,
                const std::string& labels_port);

/// A number as Python's str() writes it: 3 -> "3", 3.0 -> "3.0", 0.1 -> "0.1".
std::string python_number(const nlohmann::json& v);

/// Comma-separated items, blanks trimmed, empty ones dropped ("a, b," -> a, b).
std::vector<std::string> split_commas(const std::string& text);

/// A LIST value of strings.
nlohmann::json to_list(const std::vector<std::string>& items);

}  // namespace codefy::nodes
