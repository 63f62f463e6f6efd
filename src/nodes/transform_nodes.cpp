// Transforms, as CodefyUI's transform nodes chain them: each step node takes
// the chain so far (optional) and hands it on with its own step appended;
// ComposeTransform joins chains built apart. A chain is plain data on a
// TRANSFORM edge; the Dataset node applies it (train::Augmentation).
#include "nodes/library.h"
#include "train/augment.h"
#include "train/data.h"
#include "util/list.h"

#include <string>
#include <vector>

namespace codefy {

using graph::DataType;

namespace {

/// Normalization statistics by preset name (torchvision's channel order).
struct NormalizePreset {
  const char* name;
  std::vector<double> mean, std;
};
const std::vector<NormalizePreset>& normalize_presets() {
  static const std::vector<NormalizePreset> presets = {
      {"ImageNet", {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}},
      {"CIFAR-10", {0.4914, 0.4822, 0.4465}, {0.2470, 0.2435, 0.2616}},
      {"CIFAR-100", {0.5071, 0.4865, 0.4409}, {0.2673, 0.2564, 0.2762}},
      {"Half", {0.5}, {0.5}},
      // Fashion-MNIST's training-split statistics (the usual quoted values).
      {"FashionMNIST", {0.2860}, {0.3530}},
      {"MNIST", {0.1307}, {0.3081}},
  };
  return presets;
}

/// "0.5, 0.25" -> {0.5, 0.25}; fails naming the param on anything else.
std::vector<double> number_list(const std::string& text, const std::string& param) {
  std::vector<double> v;
  for (const auto& part : util::split_list(text)) {
    const auto n = train::parse_number(part);
    if (!n) NodeContext::fail_param(param, "expected numbers separated by commas, got \"" + text + "\"");
    v.push_back(*n);
  }
  if (v.empty()) NodeContext::fail_param(param, "give one value per channel, or one value for all");
  return v;
}

/// The chain on the "transform" input (empty when unwired) with `step` appended.
ValueMap append_step(NodeContext& ctx, const train::AugmentStep& step) {
  train::Augmentation chain;
  if (const auto* before = ctx.input_if<nlohmann::json>("transform")) {
    try {
      chain = train::Augmentation::from_json(*before);
    } catch (const train::AugmentationError& e) {
      NodeContext::fail_input("transform", e.what());
    }
  }
  chain.steps.push_back(step);
  try {
    chain = train::Augmentation::from_json(chain.to_json());  // the new step checked as a Dataset will check it
  } catch (const train::AugmentationError& e) {
    NodeContext::fail_param("", e.what());
  }
  return ValueMap{{"transform", chain.to_json()}};
}

/// A step node: optional chain in, chain out, its own params.
graph::NodeDef step_node(const char* name, const char* description, std::vector<graph::ParamDef> params) {
  graph::NodeDef d{
      name,
      "Data",
      description,
      {def::in("transform", DataType::kTransform, "Steps to run before this one; unwired starts a chain", true)},
      {def::out("transform", DataType::kTransform, "The chain so far, with this step appended")},
      std::move(params)};
  return d;
}

}  // namespace

void nodes::register_transform_nodes(NodeRegistry& r) {
  r.add(
      step_node("RandomCrop",
                "Pad, then take a random size x size window: the object lands a few pixels off centre each "
                "epoch, so the model stops relying on where it was.",
                {def::integer("size", 32, "Side length in pixels of the cropped square", 1),
                 def::integer("padding", 4, "Pixels added on every side before cropping", 0),
                 def::advanced(def::select("padding_mode", "constant", {"constant", "edge", "reflect"},
                                           "What the added border holds: 0, the edge pixel, or the image mirrored"))}),
      [](NodeContext& ctx) {
        train::AugmentStep s;
        s.type = "RandomCrop";
        s.size = ctx.param_int("size");
        s.padding = ctx.param_int("padding");
        s.padding_mode = ctx.param_string("padding_mode");
        return append_step(ctx, s);
      });
  r.add(step_node("RandomHorizontalFlip", "Mirror the image left to right with probability p.",
                  {def::number("p", 0.5, "Probability of flipping a sample", 0.0, 1.0)}),
        [](NodeContext& ctx) {
          train::AugmentStep s;
          s.type = "RandomHorizontalFlip";
          s.p = ctx.param_float("p");
          return append_step(ctx, s);
        });
  r.add(step_node("RandomRotation", "Rotate by a random angle within ±degrees (nearest pixel, corners filled).",
                  {def::number("degrees", 15.0, "Half-width of the rotation range, in degrees", 0.0, 180.0),
                   def::advanced(def::boolean("expand", false,
                                              "Grow the canvas so no corner is cut off (not available in Codefy: "
                                              "the image keeps its size)")),
                   def::advanced(def::number("fill", 0.0, "Value for the corners the rotation leaves empty"))}),
        [](NodeContext& ctx) {
          if (ctx.param_bool("expand"))
            NodeContext::fail_param("expand", "growing the canvas is not available in Codefy; leave it off");
          train::AugmentStep s;
          s.type = "RandomRotation";
          s.degrees = ctx.param_float("degrees");
          s.fill = ctx.param_float("fill");
          return append_step(ctx, s);
        });
  std::vector<std::string> preset_names;
  for (const auto& p : normalize_presets()) preset_names.push_back(p.name);
  preset_names.push_back("Custom");
  r.add(step_node("NormalizeTransform", "Standardise each channel to (x - mean) / std.",
                  {def::select("preset", "Half", preset_names,
                               "Channel statistics: Half maps [0, 1] to [-1, 1]; a data set's own for its "
                               "published results; Custom: mean and std below"),
                   def::text("mean", "0.5", "Per-channel mean, comma separated (preset Custom)"),
                   def::text("std", "0.5", "Per-channel standard deviation, comma separated (preset Custom)")}),
        [](NodeContext& ctx) {
          train::AugmentStep s;
          s.type = "NormalizeTransform";
          const std::string preset = ctx.param_string("preset");
          for (const auto& p : normalize_presets())
            if (preset == p.name) {
              s.mean = p.mean;
              s.std = p.std;
            }
          if (preset == "Custom") {
            s.mean = number_list(ctx.param_string("mean"), "mean");
            s.std = number_list(ctx.param_string("std"), "std");
            if (s.mean.size() != s.std.size())
              NodeContext::fail_param("std", "mean has " + std::to_string(s.mean.size()) + " value(s) and std " +
                                                 std::to_string(s.std.size()) + "; they describe the same channels");
          }
          return append_step(ctx, s);
        });
  r.add(step_node("ToTensorTransform",
                  "Images as tensors in [0, 1]. Codefy's images are tensors already: kept so CodefyUI chains run "
                  "unchanged.",
                  {}),
        [](NodeContext& ctx) {
          train::AugmentStep s;
          s.type = "ToTensorTransform";
          return append_step(ctx, s);
        });

  std::vector<graph::PortDef> steps;
  for (int i = 1; i <= 8; ++i)
    steps.push_back(def::in("step_" + std::to_string(i), DataType::kTransform,
                            "Chain to run at position " + std::to_string(i), true));
  r.add({"ComposeTransform",
         "Data",
         "Join several transform chains into one, in port order: step_1 runs first.",
         steps,
         {def::out("transform", DataType::kTransform, "The chains joined")},
         {def::integer("steps", 2, "How many chains to join", 2, 8)}},
        [](NodeContext& ctx) {
          train::Augmentation all;
          for (int i = 1; i <= 8; ++i) {
            const std::string port = "step_" + std::to_string(i);
            const auto* chain = ctx.input_if<nlohmann::json>(port);
            if (!chain) continue;
            try {
              for (auto& s : train::Augmentation::from_json(*chain).steps) all.steps.push_back(std::move(s));
            } catch (const train::AugmentationError& e) {
              NodeContext::fail_input(port, e.what());
            }
          }
          return ValueMap{{"transform", all.to_json()}};
        });
}

}  // namespace codefy
