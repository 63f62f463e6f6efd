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
#include <optional>
#include <string>
#include <variant>

namespace codefy {

/// A picture a node drew (Visualize's plot, Forecast's): a PNG, base64-encoded
/// as CodefyUI's messages and outputs carry it. A type of its own, so nothing
/// recognises an image by how its text begins.
struct Image {
  std::string base64_png;
};

/// One port's value. Plain data (lists of losses, metric dicts) is JSON;
/// heavy or stateful things are shared handles.
using Value =
    std::variant<std::monostate, torch::Tensor, double, std::string, nlohmann::json, train::ModelPtr, train::DatasetPtr,
                 train::DataLoaderPtr, train::OptimizerPtr, train::LossPtr, train::SchedulerPtr, Image>;

/// A node's inputs or outputs by port name.
using ValueMap = std::map<std::string, Value>;

/// Short type name of what a value holds ("TENSOR", "MODEL", ...), for messages.
const char* value_kind(const Value& v);

/// A small JSON summary for events and `--json` output, in CodefyUI's shape
/// (its `output_summary`): lower-case `type` (tensor, model, scalar, string,
/// list, dict, dataset, dataloader, optimizer, loss_fn, scheduler); a
/// tensor's shape, dtype ("torch.float32"), min/max (and mean when floating)
/// and its values when it has at most 256; a model's class, params and
/// trainable; a list's length, repr and values (at most 256 plain ones).
/// Statistics of a tensor past 2^20 elements come from a sample of that many
/// (`stats_sampled`: true), so a summary costs at most that much.
nlohmann::json summarize(const Value& v);
/// summarize() of each port: {port: summary}.
nlohmann::json summarize(const ValueMap& values);

/// Adds the bytes a value holds to `counter`: tensors by storage,
/// each storage once; models by parameters and buffers; datasets and loaders
/// by their tensors; optimizers by their state; text by length.
void count_bytes(const Value& v, store::StorageCounter& counter);
/// Bytes held by a node's outputs, shared storage counted once.
int64_t value_bytes(const ValueMap& values);

/// PyTorch's name of a dtype: "torch.float32", "torch.int64"...
std::string torch_dtype_name(c10::ScalarType t);

/// The first output that is an Image (its base64 PNG), for the editor's
/// `image` field and `codefy run`'s files; nullopt when there is none.
std::optional<std::string> find_image(const ValueMap& values);

/// A verbose run records a teaching node's steps as extra outputs named as
/// CodefyUI's run output store names them, `__step__{index}__{name}`: the
/// inspector lists them beside the ports, summaries leave them out.
std::string step_port(int index, const std::string& name);
/// Whether `port` is such a step output, not one of the node's ports.
bool is_step_port(const std::string& port);

/// Human-readable text of a value for Print.
std::string to_display_string(const Value& v);

}  // namespace codefy
