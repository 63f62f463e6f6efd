// IO: ModelSaver, ModelLoader, Inference, CheckpointSaver, CheckpointLoader, Visualize, ImageReader,
// and GraphInput / GraphOutput (a graph's declared inputs and outputs).
#include "engine/graph_contract.h"
#include "nodes/library.h"
#include "plot/plot.h"
#include "train/checkpoint.h"
#include "train/resume_state.h"
#include "train/serialize.h"
#include "util/image_size.h"
#include "util/text.h"

#include <torch/torch.h>

#include <png.h>

#include <cctype>
#include <cmath>

namespace codefy {

using graph::DataType;

namespace {

/// A tensor from whatever Visualize was given on input `port`: a tensor, a number, a list of numbers.
torch::Tensor as_tensor(const Value& v, const std::string& port) {
  if (const auto* t = std::get_if<torch::Tensor>(&v)) return t->detach().to(torch::kCPU).to(torch::kFloat);
  if (const auto* d = std::get_if<double>(&v)) return torch::tensor({static_cast<float>(*d)});
  if (const auto* j = std::get_if<nlohmann::json>(&v)) {
    if (j->is_array()) {
      std::vector<float> values;
      for (const auto& x : *j) {
        if (!x.is_number()) NodeContext::fail_input(port, "a list to plot must hold numbers only");
        values.push_back(x.get<float>());
      }
      return torch::tensor(values);
    }
  }
  NodeContext::fail_input(port, std::string("cannot plot a ") + value_kind(v) + "; give a tensor or a list of numbers");
}

/// Whether this process writes files: a single process, or rank 0 of a data-parallel world.
bool is_writer(const NodeContext& ctx) { return !ctx.run().data_parallel || ctx.run().data_parallel->rank() == 0; }

void register_model_saver(NodeRegistry& r) {
  graph::NodeDef d{"ModelSaver",
                   "IO",
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
    const auto path = ctx.output_path("path", "weights file", train::is_weights_file,
                                      ctx.param_string("format") == "safetensors" ? ".safetensors" : "");
    try {
      // Data-parallel ranks hold the same weights: rank 0 alone writes them.
      if (is_writer(ctx)) train::save_weights(path, train::state_dict(*model));
    } catch (const std::exception& e) {
      NodeContext::fail_param("path", e);
    }
    return ValueMap{{"path", path.string()}, {"model", model}};
  });
}

void register_model_loader(NodeRegistry& r) {
  graph::NodeDef d{"ModelLoader",
                   "IO",
                   "Load weights from a .pt/.pth (PyTorch state_dict) or .safetensors file into a model.",
                   {def::in("model", DataType::kModel, "Model to load into (its architecture must match)", true)},
                   {def::out("model", DataType::kModel, "Model with the loaded weights")},
                   {def::file("path", "", "Weights file, relative to the graph file"),
                    def::select("load_mode", "state_dict", {"state_dict"}, "What the file holds"),
                    def::device("Where to put the model"), def::boolean("strict", true, "Every key must match")}};
  d.cacheable = false;
  r.add(std::move(d), [](NodeContext& ctx) {
    if (!ctx.has_input("model"))
      NodeContext::fail_input("model", "state_dict mode needs a model: connect the model the weights belong to");
    auto model = ctx.input_as<train::ModelPtr>("model");
    const auto path = ctx.param_path("path");
    train::StateDict dict;
    try {
      dict = train::load_weights(path);
    } catch (const std::exception& e) {
      NodeContext::fail_param("path", e);
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
      NodeContext::fail_param("path", e, path.string() + ": ");
    }
    model->to(ctx.device());
    return ValueMap{{"model", model}};
  });
}

void register_inference(NodeRegistry& r) {
  graph::NodeDef d{
      "Inference",
      "IO",
      "Run a trained model forward on a tensor (eval mode, no gradients).",
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

void register_checkpoint_saver(NodeRegistry& r) {
  graph::NodeDef d{"CheckpointSaver",
                   "IO",
                   "Save a training checkpoint: weights, optimizer state, epoch, counters, seeds, schedule and "
                   "gradient-scaler state. Wire TrainingLoop's model, optimizer, metrics (and grad_scaler_state "
                   "for fp16); a CheckpointLoader later resumes to the same weights as one uninterrupted run.",
                   {def::in("model", DataType::kModel, "Model to save"),
                    def::in("optimizer", DataType::kOptimizer, "Optimizer (its state is saved)"),
                    def::in("losses", DataType::kTensor, "Loss history", true),
                    def::in("grad_scaler_state", DataType::kAny, "fp16 gradient scaler state", true),
                    def::in("metrics", DataType::kAny, "TrainingLoop metrics: epoch, counters, seeds, schedule", true)},
                   {def::out("path", DataType::kString, "Path of the saved checkpoint"),
                    def::out("model", DataType::kModel, "Pass-through model")},
                   {def::text("path", "checkpoint.ckpt", "File to write, relative to the graph file"),
                    def::integer("epoch", 0, "Epoch to record (0 = the one TrainingLoop's metrics report)", 0)}};
  d.cacheable = false;
  r.add(std::move(d), [](NodeContext& ctx) {
    auto model = ctx.input_as<train::ModelPtr>("model");
    const auto& opt = ctx.input_as<train::OptimizerPtr>("optimizer");
    if (opt->model != model)
      NodeContext::fail_input("optimizer", "the optimizer belongs to another model than the one being saved");
    train::Checkpoint c;
    c.model = train::state_dict(*model);
    c.optimizer_state = train::save_optimizer_state(*opt->optimizer);
    nlohmann::json metrics = nlohmann::json::object();
    if (const auto* m = ctx.input_if<nlohmann::json>("metrics")) metrics = *m;
    int64_t epoch = ctx.param_int("epoch");
    if (epoch == 0 && !metrics.empty()) {
      try {
        epoch = train::ResumeState::from_json(metrics).last_epoch;
      } catch (const std::invalid_argument& e) {
        NodeContext::fail_input("metrics", std::string("expected a TrainingLoop's metrics: ") + e.what());
      }
    }
    c.meta = {{"format", "codefy-checkpoint"},
              {"epoch", epoch},
              {"optimizer", opt->type},
              {"metrics", metrics},
              {"grad_scaler_state", nlohmann::json()}};
    if (const auto* s = ctx.input_if<nlohmann::json>("grad_scaler_state")) c.meta["grad_scaler_state"] = *s;
    if (const auto* l = ctx.input_if<torch::Tensor>("losses")) {
      auto t = l->detach().to(torch::kCPU).to(torch::kDouble).contiguous();
      c.meta["losses"] = std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
    }
    const auto path = ctx.output_path("path", "checkpoint", train::is_checkpoint_file);
    try {
      if (is_writer(ctx)) train::save_checkpoint(path, c);  // rank 0 alone, as the weights
    } catch (const std::exception& e) {
      NodeContext::fail_param("path", e);
    }
    return ValueMap{{"path", path.string()}, {"model", model}};
  });
}

void register_checkpoint_loader(NodeRegistry& r) {
  graph::NodeDef d{"CheckpointLoader",
                   "IO",
                   "Load a checkpoint into a model and its optimizer to resume training: connect resume_state to "
                   "TrainingLoop (whose epochs is the total), and it continues exactly where the saved run was.",
                   {def::in("model", DataType::kModel, "Model with the checkpoint's architecture"),
                    def::in("optimizer", DataType::kOptimizer, "Optimizer of that model, same type as saved")},
                   {def::out("model", DataType::kModel, "Model with the saved weights"),
                    def::out("optimizer", DataType::kOptimizer, "Optimizer with the saved state"),
                    def::out("epoch", DataType::kScalar, "Epochs completed when saved"),
                    def::out("losses", DataType::kTensor, "Saved loss history"),
                    def::out("grad_scaler_state", DataType::kAny, "Saved fp16 gradient scaler state (or null)"),
                    def::out("resume_state", DataType::kAny, "Counters, seeds and schedule for TrainingLoop")},
                   {def::file("path", "checkpoint.ckpt", "Checkpoint file, relative to the graph file"),
                    def::device("Where to put the model")}};
  d.cacheable = false;
  r.add(std::move(d), [](NodeContext& ctx) {
    auto model = ctx.input_as<train::ModelPtr>("model");
    const auto& opt = ctx.input_as<train::OptimizerPtr>("optimizer");
    const auto path = ctx.param_path("path");
    train::Checkpoint c;
    try {
      c = train::load_checkpoint(path);
    } catch (const std::exception& e) {
      NodeContext::fail_param("path", e);
    }
    const std::string saved_type = c.meta.value("optimizer", "");
    if (saved_type != opt->type)
      NodeContext::fail_input("optimizer",
                              "the checkpoint holds " + saved_type + " state, but this optimizer is " + opt->type);
    try {
      train::load_state_dict(*model, c.model);
      model->to(ctx.device());
      train::load_optimizer_state(*opt->optimizer, c.optimizer_state);
    } catch (const std::exception& e) {
      NodeContext::fail_param("path", e, path.string() + ": ");
    }
    train::ResumeState resume;
    std::vector<double> losses;
    try {
      resume = train::ResumeState::from_checkpoint_meta(c.meta);
      losses = c.meta.value("losses", std::vector<double>{});
    } catch (const std::exception& e) {
      NodeContext::fail_param("path", path.string() + ": not a checkpoint Codefy can resume from: " + e.what());
    }
    return ValueMap{{"model", model},
                    {"optimizer", opt},
                    {"epoch", static_cast<double>(resume.last_epoch)},
                    {"losses", torch::tensor(std::vector<float>(losses.begin(), losses.end()), torch::kFloat)},
                    {"grad_scaler_state", resume.grad_scaler_state},
                    {"resume_state", resume.to_json()}};
  });
}

void register_visualize(NodeRegistry& r) {
  r.add({"Visualize",
         "Utility",
         "Plot data as a line, histogram, heatmap or image (a base64 PNG). A loss history (TrainingLoop's losses, "
         "its val_losses beside them) is drawn over epochs 1, 2, 3...",
         {def::in("data", DataType::kAny, "Tensor or list of numbers"),
          def::in("val_losses", DataType::kAny,
                  "Validation loss per epoch (TrainingLoop's val_losses): a second line beside data, with a legend",
                  true)},
         {def::out("image", DataType::kString, "Base64-encoded PNG image")},
         {def::text("title", "", "Plot title"),
          def::select("plot_type", "line", {"line", "histogram", "heatmap", "image"}, "Kind of plot"),
          def::select("x_axis", "auto", {"auto", "epoch", "index"},
                      "Line plots: epoch counts from 1 for a loss history per epoch, index from 0; auto is epoch "
                      "when data is TrainingLoop's losses or val_losses is connected, index otherwise")}},
        [](NodeContext& ctx) {
          plot::PlotRequest req;
          req.kind = ctx.param_string("plot_type");
          req.title = ctx.param_string("title");
          const bool has_val = ctx.has_input("val_losses");
          const std::string x_axis = ctx.param_string("x_axis");
          const InputSource* source = ctx.input_source("data");
          const bool from_training = source && source->node_type == "TrainingLoop" &&
                                     (source->port == "losses" || source->port == "val_losses");
          const bool loss_history = x_axis == "epoch" || (x_axis == "auto" && (has_val || from_training));
          if (loss_history) {
            req.x_axis = plot::XAxis::kEpoch;
            req.y_label = "Loss";
          }
          const torch::Tensor data = as_tensor(ctx.input("data"), "data");
          std::vector<plot::Series> series{{loss_history ? "training loss" : "data", data}};
          if (has_val) {
            const torch::Tensor val = as_tensor(ctx.input("val_losses"), "val_losses");
            // TrainingLoop gives an empty history when it had no validation data.
            if (val.numel() > 0 && req.kind == "line") {
              series.push_back({loss_history ? "validation loss" : "val_losses", val});
            } else if (val.numel() > 0) {
              ctx.warn("val_losses is drawn on line plots only; the " + req.kind + " shows data alone");
            }
          }
          std::string png;
          try {
            png = series.size() > 1 ? plot::render_lines_png(series, req) : plot::render_png(data, req);
          } catch (const std::invalid_argument& e) {
            NodeContext::fail_input("data", e.what());
          }
          return ValueMap{{"image", Image{util::base64_encode(png)}}};
        });
}

/// A PNG as CodefyUI's ImageReader gives it (PIL's convert(mode), then
/// ToTensor): float32 (C, H, W) in [0, 1], C = 3 (RGB), 1 (L) or 4 (RGBA).
/// Alpha is dropped, not composited, for RGB and L, and L is PIL's
/// (299 R + 587 G + 114 B) / 1000 in its fixed-point form. `image` has been
/// opened by png_image_begin_read_*; `what` names the source in errors.
/// The header's size is held against the pixel cap before any pixel buffer
/// exists, and the buffer is a tensor, so the CPU memory budget counts it.
torch::Tensor decode_png(png_image& image, const std::string& mode, const std::string& what) {
  if (const std::string why = util::image_too_large({image.width, image.height}); !why.empty()) {
    png_image_free(&image);
    throw std::runtime_error("cannot decode PNG " + what + ": " + why);
  }
  image.format = PNG_FORMAT_RGBA;
  const auto h = static_cast<int64_t>(image.height), w = static_cast<int64_t>(image.width);
  torch::Tensor pixels;
  try {
    pixels = torch::empty({h, w, 4}, torch::kUInt8);
  } catch (...) {
    png_image_free(&image);
    throw;
  }
  if (!png_image_finish_read(&image, nullptr, pixels.data_ptr<uint8_t>(), 0, nullptr)) {
    png_image_free(&image);
    throw std::runtime_error("cannot decode PNG " + what + ": " + image.message);
  }
  torch::Tensor rgba = pixels.permute({2, 0, 1});
  if (mode == "L") {
    const torch::Tensor c = rgba.narrow(0, 0, 3).to(torch::kInt32);
    rgba = (c[0] * 19595 + c[1] * 38470 + c[2] * 7471 + 0x8000).div(65536, "floor").unsqueeze(0);
  } else if (mode != "RGBA") {
    rgba = rgba.narrow(0, 0, 3);
  }
  return rgba.to(torch::kFloat32, false, false, torch::MemoryFormat::Contiguous).div_(255.0f);
}

torch::Tensor read_png(const std::filesystem::path& path, const std::string& mode) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    throw std::runtime_error("cannot read PNG " + path.string() + ": " + image.message);
  return decode_png(image, mode, path.string());
}

/// A PNG sent as base64 text (an optional `data:image/png;base64,` prefix is skipped), as RGB.
torch::Tensor read_png_base64(const std::string& text) {
  const size_t comma = text.rfind("data:", 0) == 0 ? text.find(',') : std::string::npos;
  const std::string bytes = util::base64_decode(comma == std::string::npos ? text : text.substr(comma + 1));
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    throw std::runtime_error(std::string("the base64 payload is not a PNG: ") + image.message);
  return decode_png(image, "RGB", "from base64");
}

/// Resizes a (C, H, W) image in [0, 1] to size x size with antialiased
/// bilinear filtering (as PIL's resize does), rounded to 8-bit levels.
torch::Tensor resize_image(const torch::Tensor& img, int64_t size) {
  namespace F = torch::nn::functional;
  torch::Tensor r = F::interpolate((img * 255.0f).unsqueeze(0), F::InterpolateFuncOptions()
                                                                    .size(std::vector<int64_t>{size, size})
                                                                    .mode(torch::kBilinear)
                                                                    .align_corners(false)
                                                                    .antialias(true));
  return r.squeeze(0).round().clamp(0, 255).div(255.0f).contiguous();
}

void register_image_reader(NodeRegistry& r) {
  r.add(
      {"ImageReader",
       "IO",
       "Read an image file from disk and output as a tensor (C, H, W) with values in [0, 1]",
       {},
       {def::out("image", DataType::kImage, "Image as tensor (C, H, W)"),
        def::out("tensor", DataType::kTensor, "Same image as generic tensor")},
       {def::file("path", "", "PNG image file, relative to the graph file", graph::ParamType::kDataFile),
        def::select("mode", "RGB", {"RGB", "L", "RGBA"}, "Color mode for the loaded image"),
        def::integer("resize", 0, "Resize image to a (resize, resize) square (0 = no resize)", 0)}},
      [](NodeContext& ctx) {
        torch::Tensor img;
        try {
          img = read_png(ctx.param_path("path"), ctx.param_string("mode"));
        } catch (const std::exception& e) {
          NodeContext::fail_param("path", e);
        }
        const int64_t size = ctx.param_int("resize");
        if (size > 0) img = resize_image(img, size);
        return ValueMap{{"image", img}, {"tensor", img}};
      },
      def::files_fingerprint({"path"}));
}

/// GraphInput's value as CodefyUI coerces it: `value` (injected by an API
/// caller, strict JSON types) or the `default` param parsed per `type`.
Value graph_input_value(const NodeContext& ctx) {
  const std::string type = ctx.param_string("type");
  const bool injected = ctx.params().contains("value");
  const std::string field = injected ? "value" : "default";
  nlohmann::json v;
  if (injected) {
    v = ctx.params().at("value");
    if (const std::string why = check_input_value(v, type); !why.empty()) NodeContext::fail_param(field, why);
  } else if (type == "image") {
    // A canvas run names a PNG file; an API caller sends it as base64.
    v = ctx.param_string("default");
    if (v.get<std::string>().empty())
      NodeContext::fail_param(field, "type=image needs 'default' set to a PNG file for canvas runs");
  } else {
    try {
      v = parse_input_default(ctx.param_string("default"), type);
    } catch (const std::invalid_argument& e) {
      NodeContext::fail_param(field, e.what());
    }
  }
  if (type == "image") {
    try {
      return injected ? read_png_base64(v.get<std::string>()) : read_png(ctx.resolve_path(v.get<std::string>()), "RGB");
    } catch (const std::exception& e) {
      NodeContext::fail_param(field, e);
    }
  }
  if (type == "string") return v.get<std::string>();
  if (type == "number" || type == "integer") return v.get<double>();
  return v;  // boolean and json stay JSON
}

void register_graph_input(NodeRegistry& r) {
  r.add(
      {"GraphInput",
       "IO",
       "Declare a named graph input and output its value",
       {},
       {def::out("value", DataType::kAny, "Value supplied by the API caller (or 'default' when run on canvas)")},
       {def::text("name", "input",
                  "Contract name of this input. Must match ^[a-zA-Z_][a-zA-Z0-9_]{0,63}$ (letters, digits, "
                  "underscore; not starting with a digit)."),
        def::select("type", "string", {"string", "number", "integer", "boolean", "json", "image"},
                    "JSON type API callers must send for this input."),
        def::boolean("required", true,
                     "When false, API callers may omit this input and 'default' applies. Image inputs must stay "
                     "required."),
        def::text("default", "",
                  "ALWAYS the canvas test value; an API-side fallback ONLY when required=false. Parsed per 'type' "
                  "(string parsing applies here only). For type=image: a PNG file path used only by canvas runs."),
        def::text("description", "", "Shown in the contract for self-documenting APIs.")}},
      [](NodeContext& ctx) {
        return ValueMap{{"value", graph_input_value(ctx)}};
      },
      // An image default is a file: its size and time are part of the cache key.
      [](const nlohmann::json& params, const std::filesystem::path& base_dir) -> std::string {
        if (params.contains("value") || params.at("type") != "image") return "";
        return file_stamp(resolve_path(params.at("default").get<std::string>(), base_dir));
      });
}

void register_graph_output(NodeRegistry& r) {
  r.add({"GraphOutput",
         "IO",
         "Declares a named output of this graph — returned to API callers by POST /api/graph/run under this node's "
         "'name'. Connect the value you want the graph to return.",
         {def::in("value", DataType::kAny, "The value to return under this output's name")},
         {},
         {def::text("name", "output",
                    "Contract name of this output. Must match ^[a-zA-Z_][a-zA-Z0-9_]{0,63}$ (letters, digits, "
                    "underscore; not starting with a digit)."),
          def::text("description", "", "Shown in the contract for self-documenting APIs.")}},
        // Pass-through: the run's outputs carry the value under this node, for the inspector and callers.
        [](NodeContext& ctx) {
          return ValueMap{{"value", ctx.input("value")}};
        });
}

}  // namespace

void nodes::register_io_nodes(NodeRegistry& r) {
  register_model_saver(r);
  register_model_loader(r);
  register_inference(r);
  register_checkpoint_saver(r);
  register_checkpoint_loader(r);
  register_visualize(r);
  register_image_reader(r);
  register_graph_input(r);
  register_graph_output(r);
}

}  // namespace codefy
