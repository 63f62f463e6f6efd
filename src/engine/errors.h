// The errors a node's run fails with, each naming where: graph, node id,
// node type and, when one is to blame, the parameter or port.
#pragma once

#include "util/errors.h"

#include <string>

namespace codefy {

/// Thrown inside a node's execute function: what went wrong and, when a
/// parameter or input is to blame, its name. The executor adds the node's
/// identity and rethrows it as NodeError.
class NodeFailure : public Error {
 public:
  NodeFailure(std::string field, const std::string& message) : Error(message), field_(std::move(field)) {}
  /// Parameter or port name ("param \"batch_size\"", "input \"model\""), may be empty.
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

/// A node failed while running.
class NodeError : public Error {
 public:
  NodeError(std::string graph, std::string node_id, std::string node_type, std::string field,
            const std::string& message);
  const std::string& graph() const { return graph_; }
  const std::string& node_id() const { return node_id_; }
  const std::string& node_type() const { return node_type_; }
  const std::string& field() const { return field_; }
  /// The message without the identity prefix.
  const std::string& detail() const { return detail_; }

 private:
  std::string graph_, node_id_, node_type_, field_, detail_;
};

/// A node ran out of memory (CPU budget, CPU allocator or device). what() is
/// the whole report: node, device, what to try, memory, original error.
class NodeOOMError : public NodeError {
 public:
  NodeOOMError(std::string graph, std::string node_id, std::string node_type, std::string device, std::string report,
               const std::string& original)
      : NodeError(std::move(graph), std::move(node_id), std::move(node_type), "", original),
        device_(std::move(device)),
        report_(std::move(report)) {}
  const char* what() const noexcept override { return report_.c_str(); }
  /// The device it ran out on ("cpu", "cuda:0").
  const std::string& device() const { return device_; }

 private:
  std::string device_, report_;
};

}  // namespace codefy
