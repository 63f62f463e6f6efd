// trace_layer_shapes: parse and connect the spec, then build and run one node
// at a time, so the trace can stop at the first node that fails and still
// report every node before it. Before a node is built or run, rough upper
// bounds of its weights, output size, intermediate values and multiply-adds
// (from its params and its actual input) are held against the limits, so a typo such as
// out_features=10000000 is refused before anything is allocated.
#include "model/layer_shapes.h"

#include "model/layer_spec.h"
#include "model/layer_spec_error.h"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace codefy::model {

using nlohmann::json;
using torch::Tensor;

namespace {

/// A size param read leniently for estimates: a whole number, the d-th entry
/// of a list (or the largest entry when d < 0), else `fallback` (the builder
/// rejects what this lets through).
double size_param(const json& params, const char* name, double fallback, int d = -1) {
  if (!params.is_object()) return fallback;
  const auto it = params.find(name);
  if (it == params.end()) return fallback;
  if (it->is_number_integer()) return std::max<double>(0, it->get<double>());
  if (it->is_array() && !it->empty()) {
    double largest = 0;
    for (size_t i = 0; i < it->size(); ++i) {
      const json& e = (*it)[i];
      const double v = e.is_number_integer() ? std::max<double>(0, e.get<double>()) : fallback;
      if (d >= 0 && static_cast<size_t>(d) == i) return v;
      largest = std::max(largest, v);
    }
    return d >= 0 ? fallback : largest;
  }
  return fallback;
}

/// Product of a kernel's sizes over D dimensions (an int counts in each).
double kernel_elements(const json& params, int dims) {
  double n = 1;
  for (int d = 0; d < dims; ++d) n *= size_param(params, "kernel_size", 1, d);
  return n;
}

/// Upper bounds for one node before it is built and run: its weights, its
/// output's elements, the elements of what it computes on the way and drops
/// (attention weights, a convolution's unfolded input), and its work.
struct Estimate {
  double weights = 0, outputs = 0, scratch = 0, multiply_adds = 0;
};

/// The input's last two sizes (H, W) and how many such planes it holds.
struct Planes {
  double count = 1, size[2] = {1, 1};
};

Planes planes_of(const Tensor* x) {
  Planes p;
  if (!x || x->dim() < 2) return p;
  p.size[0] = static_cast<double>(x->size(-2));
  p.size[1] = static_cast<double>(x->size(-1));
  const double area = std::max(1.0, p.size[0] * p.size[1]);
  p.count = static_cast<double>(x->numel()) / area;
  return p;
}

/// AdaptiveAvgPool2d's output size along dimension d: a whole number for
/// both, or a list of two where null keeps the input's size.
double adaptive_size(const json& params, int d, double input_size) {
  const json* v = params.is_object() && params.contains("output_size") ? &params["output_size"] : nullptr;
  if (v && v->is_array() && v->size() == 2 && (*v)[static_cast<size_t>(d)].is_null()) return input_size;
  return std::max(1.0, size_param(params, "output_size", 1, v && v->is_array() ? d : -1));
}

Estimate estimate(const SpecNode& node, const std::vector<Tensor>& inputs) {
  const json& p = node.params;
  const std::string& t = node.type;
  double in_elements = 0, largest_input = 0;
  for (const Tensor& x : inputs) {
    in_elements += static_cast<double>(x.numel());
    largest_input = std::max(largest_input, static_cast<double>(x.numel()));
  }
  const Tensor* x = inputs.empty() ? nullptr : &inputs.front();
  const double last_dim = x && x->dim() > 0 ? std::max<int64_t>(1, x->size(-1)) : 1;
  Estimate e;
  e.outputs = largest_input;  // elementwise layers, pooling, reshapes
  e.multiply_adds = in_elements;
  if (t == "Linear") {
    const double in = std::max(1.0, size_param(p, "in_features", 1)), out = size_param(p, "out_features", 1);
    e.weights = in * out + out;
    e.outputs = largest_input / last_dim * out;
    e.multiply_adds = e.outputs * in;
  } else if (t == "Conv1d" || t == "Conv2d" || t == "ConvTranspose2d") {
    const int dims = t == "Conv1d" ? 1 : 2;
    const double in = size_param(p, "in_channels", 1), out = size_param(p, "out_channels", 1);
    const double kernel = kernel_elements(p, dims);
    e.weights = in * out * kernel + out;
    double spatial = 1;
    for (int d = 0; d < dims; ++d) {
      const double size = x && x->dim() > d ? static_cast<double>(x->size(x->dim() - dims + d)) : 1;
      const double k = size_param(p, "kernel_size", 1, d), dilation = std::max(1.0, size_param(p, "dilation", 1, d));
      if (t == "ConvTranspose2d") {
        spatial *=
            size * std::max(1.0, size_param(p, "stride", 1, d)) + k * dilation + size_param(p, "output_padding", 0, d);
      } else {
        const bool same = p.is_object() && p.contains("padding") && p["padding"].is_string();
        spatial *= size + 2 * (same ? k * dilation : size_param(p, "padding", 0, d));
      }
    }
    e.outputs = spatial * out;
    e.scratch = spatial * in * kernel;  // the unfolded input a CPU convolution may build
    e.multiply_adds = e.outputs * in * kernel;
  } else if (t == "MaxPool2d" || t == "AvgPool2d") {
    // Each output reads a window of the kernel's size: the work is outputs x
    // window (a large kernel at stride 1 costs far more than the input's size).
    const Planes in = planes_of(x);
    double spatial = 1, window = 1;
    for (int d = 0; d < 2; ++d) {
      const double k = std::max(1.0, size_param(p, "kernel_size", 1, d));
      const double stride = std::max(1.0, size_param(p, "stride", k, d));  // unset: the kernel's size
      const double reach = std::max(1.0, size_param(p, "dilation", 1, d)) * (k - 1) + 1;
      // PyTorch's output size, rounded up (ceil_mode may add one).
      spatial *= std::max(1.0, std::ceil((in.size[d] + 2 * size_param(p, "padding", 0, d) - reach) / stride) + 1);
      window *= k;
    }
    e.outputs = in.count * spatial;
    e.multiply_adds = e.outputs * window;
  } else if (t == "AdaptiveAvgPool2d") {
    // The output's size is output_size, whatever the input's: [40000, 40000]
    // on a 1x1 input is 1.6e9 elements per plane.
    const Planes in = planes_of(x);
    double spatial = 1, window = 1;
    for (int d = 0; d < 2; ++d) {
      const double out = adaptive_size(p, d, in.size[d]);
      spatial *= out;
      window *= std::ceil(in.size[d] / out) + 1;
    }
    e.outputs = in.count * spatial;
    e.multiply_adds = e.outputs * window;
  } else if (t == "Embedding") {
    const double dim = size_param(p, "embedding_dim", 1);
    e.weights = size_param(p, "num_embeddings", 1) * dim;
    e.outputs = largest_input * dim;
  } else if (t == "LSTM" || t == "GRU") {
    const double in = size_param(p, "input_size", 1), hidden = size_param(p, "hidden_size", 1);
    const double layers = std::max(1.0, size_param(p, "num_layers", 1));
    const double directions = p.is_object() && p.value("bidirectional", false) == true ? 2 : 1;
    e.weights = layers * directions * (t == "LSTM" ? 4 : 3) * hidden * (std::max(in, hidden * directions) + hidden + 2);
    e.outputs = largest_input / last_dim * hidden * directions;
    e.multiply_adds = largest_input / last_dim * e.weights;
  } else if (t == "TransformerEncoder" || t == "TransformerDecoder") {
    const double d = size_param(p, "d_model", 1), ff = size_param(p, "dim_feedforward", 2048);
    e.weights = std::max(1.0, size_param(p, "num_layers", 1)) * (8 * d * d + 2 * d * ff + 20 * d);
    // Attention is quadratic in the sequence length.
    const double tokens = largest_input / last_dim;
    e.scratch = 2 * std::max(1.0, size_param(p, "nhead", 1)) * tokens * tokens + tokens * ff;  // weights, softmax
    e.multiply_adds = tokens * e.weights + 2 * tokens * tokens * d;
  } else if (t == "MultiHeadAttention") {
    const double d = size_param(p, "embed_dim", 1);
    e.weights = 4 * d * d + 4 * d;
    const double tokens = largest_input / last_dim;
    e.scratch = 2 * std::max(1.0, size_param(p, "num_heads", 1)) * tokens * tokens;
    e.multiply_adds = tokens * e.weights + 2 * tokens * tokens * d;
  } else if (t == "BatchNorm1d" || t == "BatchNorm2d" || t == "InstanceNorm2d") {
    e.weights = 2 * size_param(p, "num_features", 1);
  } else if (t == "GroupNorm") {
    e.weights = 2 * size_param(p, "num_channels", 1);
  } else if (t == "LayerNorm") {
    double n = 1;
    if (p.is_object() && p.contains("normalized_shape") && p["normalized_shape"].is_array())
      for (size_t i = 0; i < p["normalized_shape"].size(); ++i) n *= size_param(p, "normalized_shape", 1, int(i));
    else
      n = size_param(p, "normalized_shape", 1);
    e.weights = 2 * n;
  } else if (t == "PReLU") {
    e.weights = size_param(p, "num_parameters", 1);
  } else if (t == "Concat" || t == "Stack") {
    e.outputs = in_elements;
  }
  return e;
}

std::string with_commas(double v) {
  std::string digits = std::to_string(static_cast<long long>(std::llround(v)));
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(static_cast<size_t>(at), ",");
  return digits;
}

std::string shape_text(const Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

ShapeError error_of(const LayerSpecError& e) { return {e.layer_id(), e.layer_type(), e.param(), e.what()}; }

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const Tensor& p : module.parameters()) n += p.numel();
  return n;
}

}  // namespace

ShapeTrace trace_layer_shapes(const json& spec, const std::vector<int64_t>& input_shape, const ShapeLimits& limits) {
  if (input_shape.empty() || input_shape.size() > 6)
    throw ShapeRequestError("\"input_shape\" needs 1 to 6 sizes (after the batch dimension), got " +
                            std::to_string(input_shape.size()));
  double elements = 1;
  for (int64_t s : input_shape) {
    if (s < 1) throw ShapeRequestError("\"input_shape\" sizes must be >= 1, got " + std::to_string(s));
    elements *= static_cast<double>(s);
  }
  if (elements > static_cast<double>(limits.input_elements_max))
    throw ShapeRequestError("\"input_shape\" has " + with_commas(elements) + " elements; at most " +
                            with_commas(static_cast<double>(limits.input_elements_max)) + " are traced");

  ShapeTrace trace;
  LayerGraph graph;
  Wiring wiring;
  try {
    graph = parse_layer_spec(spec);
    if (graph.nodes.size() > limits.nodes_max)
      throw ShapeRequestError("the spec has " + std::to_string(graph.nodes.size()) + " nodes; at most " +
                              std::to_string(limits.nodes_max) + " are traced");
    wiring = connect_layers(graph);
  } catch (const LayerSpecError& e) {
    trace.error = error_of(e);
    return trace;
  }

  torch::NoGradGuard no_grad;
  std::vector<int64_t> sizes{1};
  sizes.insert(sizes.end(), input_shape.begin(), input_shape.end());
  const bool embedding_first = !wiring.order.empty() && graph.nodes[wiring.order.front()].type == "Embedding";
  std::vector<Tensor> values(graph.nodes.size());
  values[graph.input] = torch::zeros(sizes, embedding_first ? torch::kLong : torch::kFloat);

  double outputs_total = static_cast<double>(values[graph.input].numel()), multiply_adds_total = 0;
  for (size_t i : wiring.order) {
    const SpecNode& node = graph.nodes[i];
    std::vector<Tensor> inputs;
    for (size_t s : wiring.inputs[i]) inputs.push_back(values[s]);
    const auto stop = [&](const std::string& param, const std::string& message) {
      trace.error = error_of(LayerSpecError(node.id, node.type, param, message));
      trace.error->over_limit = true;
    };

    const Estimate e = estimate(node, inputs);
    if (static_cast<double>(trace.parameters) + e.weights > static_cast<double>(limits.parameters_max)) {
      stop("", "would have about " + with_commas(e.weights) + " weights; the shape preview stops at " +
                   with_commas(static_cast<double>(limits.parameters_max)) + " for the whole model");
      break;
    }
    if (outputs_total + e.outputs > static_cast<double>(limits.activations_max)) {
      stop("", "its output would have about " + with_commas(e.outputs) + " elements; the shape preview stops at " +
                   with_commas(static_cast<double>(limits.activations_max)) + " for all outputs together");
      break;
    }
    if (outputs_total + e.outputs + e.scratch > static_cast<double>(limits.activations_max)) {
      stop("", "would compute about " + with_commas(e.scratch) +
                   " intermediate elements on the way to its output; the shape preview stops at " +
                   with_commas(static_cast<double>(limits.activations_max)) + " for all values together");
      break;
    }
    if (multiply_adds_total + e.multiply_adds > limits.multiply_adds_max) {
      stop("", "would take about " + with_commas(e.multiply_adds) + " multiply-adds; the shape preview stops at " +
                   with_commas(limits.multiply_adds_max) + " for the whole model");
      break;
    }

    NodeShape shape{node.id, node.type, {}, 0};
    try {
      BuiltNode built = build_node(graph, i);
      if (built.module) {
        built.module->eval();  // batch statistics of one sample would fail (BatchNorm1d) or mean nothing
        shape.parameters = parameter_count(*built.module);
      }
      // The layer's own fault with this input, named: LibTorch reports most
      // as c10::Error, some (a reshape that cannot fit) as std::runtime_error.
      const auto failed_on = [&](std::string message) {
        std::string shapes;
        for (const Tensor& x : inputs) shapes += (shapes.empty() ? "" : ", ") + shape_text(x);
        while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back()))) message.pop_back();
        return LayerSpecError(node.id, node.type, "",
                              (inputs.size() == 1 ? "failed on input of shape " : "failed on inputs of shapes ") +
                                  shapes + ": " + message);
      };
      try {
        values[i] = built.layer ? built.layer(inputs.front()) : built.merge(inputs);
      } catch (const c10::Error& err) {
        throw failed_on(err.msg());
      } catch (const std::runtime_error& err) {
        throw failed_on(err.what());
      }
    } catch (const LayerSpecError& err) {
      trace.error = error_of(err);
      break;
    }
    shape.output_shape = values[i].sizes().vec();
    trace.parameters += shape.parameters;
    outputs_total += static_cast<double>(values[i].numel());
    multiply_adds_total += e.multiply_adds;
    trace.nodes.push_back(std::move(shape));
  }
  if (!trace.error) trace.output_shape = values[wiring.output_source].sizes().vec();
  return trace;
}

json to_json(const ShapeTrace& trace) {
  json nodes = json::array();
  for (const NodeShape& n : trace.nodes)
    nodes.push_back({{"id", n.id}, {"type", n.type}, {"output_shape", n.output_shape}, {"params", n.parameters}});
  json error;
  if (trace.error) {
    const auto or_null = [](const std::string& s) { return s.empty() ? json() : json(s); };
    error = {{"node_id", or_null(trace.error->node_id)},
             {"node_type", or_null(trace.error->node_type)},
             {"param", or_null(trace.error->param)},
             {"message", trace.error->message}};
  }
  return {{"nodes", std::move(nodes)},
          {"output_shape", trace.error ? json() : json(trace.output_shape)},
          {"total_params", trace.parameters},
          {"error", std::move(error)}};
}

}  // namespace codefy::model
