// The run output store's values as the teaching inspector reads them
// (CodefyUI's /api/execution/outputs routes): a row per captured port, and
// one port's values, sliced and capped at max_elements.
#pragma once

#include "engine/value.h"
#include "server/http_message.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace codefy::server {

/// A run's captured outputs: node id → port → value.
struct RunCapture {
  std::map<std::string, ValueMap> nodes;
};

/// Bytes a capture holds, each storage once across the whole run (tensors
/// that share a storage, on one port or several, count it once).
int64_t capture_bytes(const RunCapture& c);

/// "tensor", "model", "scalar", "string", "list", or Codefy's kind in lower case.
std::string output_type(const Value& v);
/// `{"node_id", "port", "type", "full_shape"}` (full_shape null unless a tensor).
nlohmann::json output_row(const std::string& node_id, const std::string& port, const Value& v);

/// One port's values. `slice` is CodefyUI's: comma-separated pieces, each an
/// int, ":" or empty (all), or start:stop[:step] with blanks for none.
/// Throws HttpError: 400 for a bad slice or one the tensor refuses, 413 when
/// more than `max_elements` values would come back.
nlohmann::json output_values(const Value& v, const std::string& slice, int64_t max_elements);

}  // namespace codefy::server
