// LayerSpecError's message: the location, then what is wrong.
#include "model/layer_spec_error.h"

#include <utility>

namespace codefy::model {
namespace {

std::string located_message(const std::string& layer_id, const std::string& layer_type, const std::string& param,
                            const std::string& message) {
  std::string where;
  if (!layer_id.empty()) where = "layer \"" + layer_id + "\"";
  if (!layer_type.empty()) where += where.empty() ? layer_type : " (" + layer_type + ")";
  if (!param.empty()) where += (where.empty() ? "parameter \"" : ", parameter \"") + param + "\"";
  return where.empty() ? message : where + ": " + message;
}

}  // namespace

LayerSpecError::LayerSpecError(std::string layer_id, std::string layer_type, std::string param,
                               const std::string& message)
    : Error(located_message(layer_id, layer_type, param, message)),
      layer_id_(std::move(layer_id)),
      layer_type_(std::move(layer_type)),
      param_(std::move(param)) {}

}  // namespace codefy::model
