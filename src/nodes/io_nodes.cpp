// IO: ModelSaver, ModelLoader, Inference, Visualize.
#include "engine/node.h"
#include "nodes/plot.h"
#include "train/serialize.h"

#include <torch/torch.h>

namespace codefy {

using graph::DataType;

namespace {

/// A tensor from whatever Visualize was given: a tensor, a number, a list of numbers.
torch::Tensor as_tensor(const Value& v) {
  if (const auto* t = std::get_if<torch::Tensor>(&v)) return t->detach().to(torch::kCPU).to(torch::kFloat);
  if (const auto* d = std::get_if<double>(&v)) return torch::tensor({static_cast<float>(*d)});
  if (const auto* j = std::get_if<nlohmann::json>(&v)) {
    if (j->is_array()) {
      std::vector<float> values;
      for (const auto& x : *j) {
        if (!x.is_number()) NodeContext::fail("input \"data\"", "a list to plot must hold numbers only");
        values.push_back(x.get<float>());
      }
      return torch::tensor(values);
    }
  }
  NodeContext::fail("input \"data\"", std::string("cannot plot a ") + value_kind(v) + "; give a tensor or a list of numbers");
}

}  // namespace

void register_io_nodes(NodeRegistry& r) {
  {
    graph::NodeDef d{"ModelSaver", "IO",
                     "Save model weights (state_dict) to .pt/.pth (readable by Python's torch.load) or .safetensors. "
                     "The file is written whole or not at all.",
                     {def::in("model", DataType::kModel, "Model to save")},
                     {def::out("path", DataType::kString, "Path of the saved file"),
                      def::out("model", DataType::kModel, "Pass-through model")},
                     {def::text("path", "model_weights.pt", "File to write, relative to the graph file"),
                      def::select("save_mode", "state_dict", {"state_dict"}, "What to save"),
                      def::select("format", "pytorch", {"pytorch", "safetensors"}, "File format")}};
    d.cacheable = false;
    r.add(std::move(d), [](NodeContext& ctx) {
      auto model = ctx.input_as<train::ModelPtr>("model");
      auto path = ctx.param_path("path");
      if (ctx.param_string("format") == "safetensors") path.replace_extension(".safetensors");
      try {
        if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
        train::save_weights(path, train::state_dict(*model));
      } catch (const std::exception& e) {
        NodeContext::fail_param("path", e.what());
      }
      return ValueMap{{"path", path.string()}, {"model", model}};
    });
  }
  {
    graph::NodeDef d{"ModelLoader", "IO",
                     "Load weights from a .pt/.pth (PyTorch state_dict) or .safetensors file into a model.",
                     {def::in("model", DataType::kModel, "Model to load into (its architecture must match)", true)},
                     {def::out("model", DataType::kModel, "Model with the loaded weights")},
                     {def::text("path", "", "Weights file, relative to the graph file"),
                      def::select("load_mode", "state_dict", {"state_dict"}, "What the file holds"),
                      def::device("Where to put the model"),
                      def::boolean("strict", true, "Every key must match")}};
    d.params[0].type = graph::ParamType::kModelFile;
    d.params[0].required = true;
    d.cacheable = false;
    r.add(std::move(d), [](NodeContext& ctx) {
      if (!ctx.has_input("model"))
        NodeContext::fail("input \"model\"", "state_dict mode needs a model: connect the model the weights belong to");
      auto model = ctx.input_as<train::ModelPtr>("model");
      const auto path = ctx.param_path("path");
      train::StateDict dict;
      try {
        dict = train::load_weights(path);
      } catch (const std::exception& e) {
        NodeContext::fail_param("path", e.what());
      }
      if (!ctx.param_bool("strict")) {
        // Keep only keys the model has, with matching shapes.
        const auto own = train::state_dict(*model);
        train::StateDict kept;
        for (auto& [k, v] : dict)
          for (const auto& [ok, ov] : own)
            if (ok == k && ov.sizes() == v.sizes()) kept.emplace_back(k, v);
        for (const auto& [ok, ov] : own) {
          bool found = false;
          for (const auto& [k, v] : kept) found = found || k == ok;
          if (!found) kept.emplace_back(ok, ov);
        }
        dict = std::move(kept);
      }
      try {
        train::load_state_dict(*model, dict);
      } catch (const std::exception& e) {
        NodeContext::fail_param("path", path.string() + ": " + e.what());
      }
      model->to(ctx.device());
      return ValueMap{{"model", model}};
    });
  }
  {
    graph::NodeDef d{"Inference", "IO", "Run a trained model forward on a tensor (eval mode, no gradients).",
                     {def::in("model", DataType::kModel, "Trained model"), def::in("input", DataType::kTensor, "Input batch")},
                     {def::out("output", DataType::kTensor, "Model prediction (raw outputs)"),
                      def::out("model", DataType::kModel, "Pass-through model")},
                     {def::device("Where to run")}};
    d.cacheable = false;
    r.add(std::move(d), [](NodeContext& ctx) {
      auto model = ctx.input_as<train::ModelPtr>("model");
      const auto& x = ctx.input_as<torch::Tensor>("input");
      const c10::Device device = ctx.device();
      torch::NoGradGuard no_grad;
      model->to(device);
      model->eval();
      return ValueMap{{"output", model->forward(x.to(device))}, {"model", model}};
    });
  }
  r.add({"Visualize", "Utility", "Plot data as a line, histogram, heatmap or image (a base64 PNG).",
         {def::in("data", DataType::kAny, "Tensor or list of numbers")},
         {def::out("image", DataType::kString, "Base64-encoded PNG image")},
         {def::text("title", "", "Plot title"),
          def::select("plot_type", "line", {"line", "histogram", "heatmap", "image"}, "Kind of plot")}},
        [](NodeContext& ctx) {
          plot::PlotRequest req;
          req.kind = ctx.param_string("plot_type");
          req.title = ctx.param_string("title");
          std::string png;
          try {
            png = plot::render_png(as_tensor(ctx.input("data")), req);
          } catch (const std::invalid_argument& e) {
            NodeContext::fail("input \"data\"", e.what());
          }
          return ValueMap{{"image", plot::base64_encode(png)}};
        });
}

}  // namespace codefy
