// What flows along a data edge.
#pragma once

#include "store/sizing.h"
#include "train/builders.h"
#include "train/data.h"
#include "train/model.h"
#include "train/schedulers.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <variant>

namespace codefy {

/// One port's value. Plain data (lists of losses, metric dicts) is JSON;
/// heavy or stateful things are shared handles.
using Value =
    std::variant<std::monostate, torch::Tensor, double, std::string, nlohmann::json, train::ModelPtr, train::DatasetPtr,
                 train::DataLoaderPtr, train::OptimizerPtr, train::LossPtr, train::SchedulerPtr>;

/// A node's inputs or outputs by port name.
using ValueMap = std::map<std::string, Value>;

/// Short type name of what a value holds ("TENSOR", "MODEL", ...), for messages.
const char* value_kind(const Value& v);

/// A small JSON summary for events and `--json` output (shape and dtype of a
/// tensor, parameter count of a model, the value of a scalar...), never the data.
nlohmann::json summarize(const Value& v);
/// summarize() of each port: {port: summary}.
nlohmann::json summarize(const ValueMap& values);

/// Adds the bytes a value holds to `counter`: tensors by storage,
/// each storage once; models by parameters and buffers; datasets and loaders
/// by their tensors; optimizers by their state; text by length.
void count_bytes(const Value& v, store::StorageCounter& counter);
/// Bytes held by a node's outputs, shared storage counted once.
int64_t value_bytes(const ValueMap& values);

/// Human-readable text of a value for Print.
std::string to_display_string(const Value& v);

}  // namespace codefy
