// LayerSpecError: a problem in SequentialModel's layer spec, naming where it is.
#pragma once

#include "util/errors.h"

#include <string>

namespace codefy::model {

/// A problem in a layers spec, naming the layer id, layer type and parameter
/// (each empty when it doesn't apply). what() says the location once, e.g.
/// `layer "c1" (Conv2d), parameter "kernel_size": expected ...`, or is the
/// bare message when nothing in particular is to blame.
class LayerSpecError : public Error {
 public:
  LayerSpecError(std::string layer_id, std::string layer_type, std::string param, const std::string& message);
  const std::string& layer_id() const { return layer_id_; }
  const std::string& layer_type() const { return layer_type_; }
  const std::string& param() const { return param_; }

 private:
  std::string layer_id_, layer_type_, param_;
};

}  // namespace codefy::model
