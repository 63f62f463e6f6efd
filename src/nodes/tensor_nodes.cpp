// Tensor sources and operations, CodefyUI's names, ports and params:
// TensorCreate, TensorInput, TextInput; Add, Multiply, ScalarMultiply, Lerp;
// MatMul, Mean, Argmax, Softmax, CosineSimilarity; Permute, Reshape,
// Flatten, Squeeze, Unsqueeze, Concat, Stack, Split. Semantics are
// PyTorch's (broadcasting, type promotion); shapes are checked first
// (tensor_checks.h) so a mismatch names the port and both shapes.
#include "nodes/library.h"
#include "nodes/tensor_checks.h"
#include "util/list.h"
#include "util/text.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <limits>
#include <set>

namespace codefy {

using graph::DataType;

namespace {

constexpr const char* kTensorOps = "Tensor Operations";

/// Registers a node with one TENSOR input "tensor" and one TENSOR output "tensor".
void add_unary(NodeRegistry& r, std::string name, std::string category, std::string description, std::string in_desc,
               std::string out_desc, std::vector<graph::ParamDef> params,
               std::function<torch::Tensor(NodeContext&, const torch::Tensor&)> op) {
  r.add({std::move(name),
         std::move(category),
         std::move(description),
         {def::in("tensor", DataType::kTensor, std::move(in_desc))},
         {def::out("tensor", DataType::kTensor, std::move(out_desc))},
         std::move(params)},
        [op = std::move(op)](NodeContext& ctx) {
          const torch::Tensor t = nodes::tensor_input(ctx, "tensor");
          return ValueMap{{"tensor", op(ctx, t)}};
        });
}

/// Registers a node with TENSOR inputs "tensor_a", "tensor_b" and one TENSOR output "tensor".
void add_binary(NodeRegistry& r, std::string name, std::string category, std::string description, std::string a_desc,
                std::string b_desc, std::string out_desc, std::vector<graph::ParamDef> params,
                std::function<torch::Tensor(NodeContext&, const torch::Tensor&, const torch::Tensor&)> op) {
  r.add({std::move(name),
         std::move(category),
         std::move(description),
         {def::in("tensor_a", DataType::kTensor, std::move(a_desc)),
          def::in("tensor_b", DataType::kTensor, std::move(b_desc))},
         {def::out("tensor", DataType::kTensor, std::move(out_desc))},
         std::move(params)},
        [op = std::move(op)](NodeContext& ctx) {
          const torch::Tensor a = nodes::tensor_input(ctx, "tensor_a"), b = nodes::tensor_input(ctx, "tensor_b");
          return ValueMap{{"tensor", op(ctx, a, b)}};
        });
}

// ----------------------------------------------------------------------------- sources

void register_tensor_create(NodeRegistry& r) {
  r.add({"TensorCreate",
         kTensorOps,
         "Tensor of a given shape: zeros, ones, random, constant",
         {},
         {def::out("tensor", DataType::kTensor, "Created tensor")},
         {def::text("shape", "1,3,224,224", "Tensor shape as comma-separated ints (e.g. '1,3,224,224')"),
          def::select("fill", "zeros", {"zeros", "ones", "randn", "rand", "full", "arange"}, "Fill method"),
          def::number("value", 0.0, "Fill value (for 'full' mode)"),
          def::boolean("requires_grad", false, "Whether the tensor requires gradient")}},
        [](NodeContext& ctx) {
          const std::vector<int64_t> shape = nodes::shape_param(ctx, "shape");
          const std::string fill = ctx.param_string("fill");
          torch::Tensor t;
          // randn and rand draw from LibTorch's global generator, which the
          // executor seeds for this node (ctx.seed()), as CodefyUI's run seed does.
          if (fill == "zeros")
            t = torch::zeros(shape);
          else if (fill == "ones")
            t = torch::ones(shape);
          else if (fill == "randn")
            t = torch::randn(shape);
          else if (fill == "rand")
            t = torch::rand(shape);
          else if (fill == "full")
            t = torch::full(shape, ctx.param_float("value"));
          else if (fill == "arange")
            t = torch::arange(shape[0]).to(torch::kFloat32);  // the first size only, as CodefyUI
          else
            NodeContext::fail_param("fill", "unsupported fill method \"" + fill + "\"");
          if (ctx.param_bool("requires_grad")) t.set_requires_grad(true);
          return ValueMap{{"tensor", t}};
        });
}

/// TensorInput's explicit values, flattened in row-major order.
void flatten_values(const nlohmann::json& v, std::vector<double>& out) {
  if (v.is_array()) {
    for (const auto& e : v) flatten_values(e, out);
  } else if (v.is_number()) {
    out.push_back(v.get<double>());
  } else if (v.is_boolean()) {
    out.push_back(v.get<bool>() ? 1.0 : 0.0);
  } else {
    NodeContext::fail_param("values", "expected numbers, got " + v.dump());
  }
}

void register_tensor_input(NodeRegistry& r) {
  graph::ParamDef values;
  values.name = "values";
  values.type = graph::ParamType::kTensorGrid;
  values.description = "Nested list of values (used when value_mode=explicit)";  // default: null
  r.add({"TensorInput",
         "Data",
         "Teaching entry point — inline tensor editor with explicit values, random, zeros, ones, or arange. "
         "Seed-reproducible.",
         {},
         {def::out("tensor", DataType::kTensor, "Output tensor")},
         {def::text("shape", "1,4,4", "Tensor shape as comma-separated ints (e.g. '1,4,4')"),
          def::select("dtype", "float32", {"float32", "float64", "int64", "int32", "bool"}, "Data type"),
          def::select("value_mode", "random", {"explicit", "random", "zeros", "ones", "arange"},
                      "How to fill the tensor"),
          values, def::integer("seed", 0, "Seed for reproducible random (used when value_mode=random)")}},
        [](NodeContext& ctx) {
          const std::vector<int64_t> shape = nodes::shape_param(ctx, "shape");
          const std::string dtype_name = ctx.param_string("dtype");
          const c10::ScalarType dtype = dtype_name == "float64" ? torch::kFloat64
                                        : dtype_name == "int64" ? torch::kInt64
                                        : dtype_name == "int32" ? torch::kInt32
                                        : dtype_name == "bool"  ? torch::kBool
                                                                : torch::kFloat32;
          const auto options = torch::TensorOptions().dtype(dtype);
          const std::string mode = ctx.param_string("value_mode");
          int64_t numel = 1;
          for (int64_t d : shape) numel *= d;
          torch::Tensor t;
          if (mode == "explicit") {
            nlohmann::json given = ctx.params().at("values");
            if (given.is_string())
              given = nlohmann::json::parse(given.get<std::string>(), nullptr, false);  // a list's text
            if (given.is_discarded()) NodeContext::fail_param("values", "is not a nested list of numbers");
            if (given.is_null()) NodeContext::fail_param("values", "value_mode=explicit requires 'values' to be set");
            std::vector<double> flat;
            flatten_values(given, flat);
            if (static_cast<int64_t>(flat.size()) != numel)
              NodeContext::fail_param("values", "has " + std::to_string(flat.size()) + " elements but shape " +
                                                    nodes::shape_text(shape) + " requires " + std::to_string(numel));
            t = torch::tensor(flat, torch::kFloat64).to(dtype).reshape(shape);
          } else if (mode == "random") {
            // Its own generator from the `seed` param, never the run's: the same
            // values whatever else the graph draws, as in CodefyUI.
            at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(ctx.param_int("seed")));
            if (dtype == torch::kFloat32 || dtype == torch::kFloat64)
              t = torch::randn(shape, gen, options);
            else if (dtype == torch::kBool)
              t = torch::randint(0, 2, shape, gen, torch::kInt64).to(torch::kBool);
            else
              t = torch::randint(0, 10, shape, gen, options);
          } else if (mode == "zeros") {
            t = torch::zeros(shape, options);
          } else if (mode == "ones") {
            t = torch::ones(shape, options);
          } else if (mode == "arange") {
            t = torch::arange(numel, options).reshape(shape);
          } else {
            NodeContext::fail_param("value_mode", "unsupported value_mode \"" + mode + "\"");
          }
          return ValueMap{{"tensor", t}};
        });
}

void register_text_input(NodeRegistry& r) {
  r.add({"TextInput",
         "Data",
         "Free-text entry point. Type a string into the inline textarea and feed it into a Tokenizer, WordVector, "
         "or any other STRING-typed input port.",
         {},
         {def::out("text", DataType::kString, "The text value typed into this node.")},
         {def::text("value", "The quick brown fox jumps over the lazy dog.",
                    "Multi-line text. Drag the bottom-right corner of the textarea on the node body to resize.")}},
        [](NodeContext& ctx) {
          return ValueMap{{"text", ctx.param_string("value")}};
        });
}

// ----------------------------------------------------------------------------- element-wise

void register_elementwise(NodeRegistry& r) {
  add_binary(r, "Add", kTensorOps, "Element-wise sum of two tensors, with broadcasting", "First tensor",
             "Second tensor", "Result of a + b", {def::number("alpha", 1.0, "Multiplier for tensor_b: a + alpha * b")},
             [](NodeContext& ctx, const torch::Tensor& a, const torch::Tensor& b) {
               nodes::check_broadcast("tensor_a", a, "tensor_b", b);
               return torch::add(a, b, ctx.param_float("alpha"));
             });
  add_binary(r, "Multiply", kTensorOps, "Element-wise product of two tensors, with broadcasting", "First tensor",
             "Second tensor", "Result of a * b", {}, [](NodeContext&, const torch::Tensor& a, const torch::Tensor& b) {
               nodes::check_broadcast("tensor_a", a, "tensor_b", b);
               return torch::mul(a, b);
             });
  add_unary(r, "ScalarMultiply", kTensorOps, "Multiply every element of a tensor by a constant", "Input tensor",
            "tensor * scalar",
            {def::number("scalar", 1.0, "Constant scalar multiplied with every element of the input tensor")},
            [](NodeContext& ctx, const torch::Tensor& t) { return t * ctx.param_float("scalar"); });

  r.add(
      {"Lerp",
       "Diffusion",
       "Linear interpolation: $\\alpha\\,a + (1-\\alpha)\\,b$. When $\\alpha=1$ the output is $a$; when "
       "$\\alpha=0$ it's $b$. Use as a teaching stand-in for the diffusion forward equation.",
       {def::in("tensor_a", DataType::kTensor, "First tensor (weighted by alpha)."),
        def::in("tensor_b", DataType::kTensor, "Second tensor (weighted by 1 - alpha)."),
        def::in("alpha", DataType::kTensor,
                "Optional scalar or broadcastable tensor — overrides the `alpha` param when connected.", true)},
       {def::out("tensor", DataType::kTensor, "Interpolated tensor, shape determined by broadcasting.")},
       {def::number("alpha", 0.5, "Interpolation weight (0..1). Used only when the `alpha` input is not connected.")}},
      [](NodeContext& ctx) {
        const torch::Tensor a = nodes::tensor_input(ctx, "tensor_a"), b = nodes::tensor_input(ctx, "tensor_b");
        nodes::check_broadcast("tensor_a", a, "tensor_b", b);
        torch::Tensor alpha;
        if (ctx.has_input("alpha")) {
          alpha = nodes::tensor_input(ctx, "alpha");
          nodes::check_broadcast("tensor_a", a, "alpha", alpha);
          nodes::check_broadcast("tensor_b", b, "alpha", alpha);
        } else {
          alpha = torch::scalar_tensor(ctx.param_float("alpha"), a.options());  // a's dtype, as CodefyUI
        }
        return ValueMap{{"tensor", alpha * a + (1.0 - alpha) * b}};
      });
}

// ----------------------------------------------------------------------------- products and reductions

void register_products(NodeRegistry& r) {
  add_binary(r, "MatMul", kTensorOps, "Batched matrix product of two tensors", "First tensor", "Second tensor",
             "Result of matmul(a, b)", {}, [](NodeContext&, const torch::Tensor& a, const torch::Tensor& b) {
               nodes::check_matmul("tensor_a", a, "tensor_b", b);
               return torch::matmul(a, b);
             });

  add_unary(r, "Mean", kTensorOps, "Average a tensor over one or more dimensions", "Input tensor", "Reduced tensor",
            {def::text("dim", "-1", "Dimension(s) to reduce as comma-separated ints (e.g. '-1' or '2,3')"),
             def::boolean("keepdim", false, "Whether to keep the reduced dimension")},
            [](NodeContext& ctx, const torch::Tensor& t) {
              std::vector<int64_t> dims = nodes::int_list_param(ctx, "dim");
              std::set<int64_t> seen;
              for (int64_t& d : dims) {
                const int64_t n = t.dim();
                if (d < -n || d >= n || n == 0)
                  NodeContext::fail_param("dim", "dimension " + std::to_string(d) +
                                                     " is out of range for a tensor of shape " +
                                                     nodes::shape_text(t.sizes()));
                if (!seen.insert(d < 0 ? d + n : d).second)
                  NodeContext::fail_param("dim", "dimension " + std::to_string(d) + " appears twice");
              }
              return t.mean(dims, ctx.param_bool("keepdim"));
            });

  add_unary(
      r, "Argmax", kTensorOps, "Index of the largest value along a dimension", "Input tensor (often logits).",
      "Indices of the largest values (the reduced dimension dropped).",
      {def::integer("dim", -1,
                    "Dimension to take the argmax over; dim=1 picks the class of a segmentation output (N,C,H,W)."),
       def::boolean("keepdim", false, "Keep the reduced dimension (with length 1).")},
      [](NodeContext& ctx, const torch::Tensor& t) {
        const int64_t dim = nodes::dim_param(ctx, "dim", t.dim(), t.sizes());
        return torch::argmax(t, dim, ctx.param_bool("keepdim"));
      });

  add_unary(r, "Softmax", kTensorOps,
            "Apply softmax along a dimension: $\\text{softmax}(x_i) = \\frac{e^{x_i}}{\\sum_j e^{x_j}}$. "
            "Numerically stable: subtract $\\max(x)$ before exponentiating.",
            "Input tensor (logits)", "Softmax probabilities",
            {def::integer("dim", -1, "Dimension along which to apply softmax")},
            [](NodeContext& ctx, const torch::Tensor& t) {
              const int64_t dim = nodes::dim_param(ctx, "dim", t.dim(), t.sizes());
              if (!t.is_floating_point())
                NodeContext::fail_input("tensor", std::string("softmax needs a floating-point tensor, got ") +
                                                      torch_dtype_name(t.scalar_type()));
              return torch::softmax(t, dim);
            });
}

/// CosineSimilarity's inputs as CodefyUI takes them: float32, a 1-D tensor as one row.
torch::Tensor rows(const NodeContext& ctx, const std::string& port) {
  torch::Tensor t = nodes::tensor_input(ctx, port).to(torch::kFloat32);
  nodes::check_rank(port, t, {1, 2}, "vectors of shape [N, D] or one of shape [D]");
  return t.dim() == 1 ? t.unsqueeze(0) : t;
}

void register_cosine_similarity(NodeRegistry& r) {
  r.add({"CosineSimilarity",
         "LLM",
         "Compute cosine similarity between every query and every key vector. For unit-length inputs this is just "
         "the dot product; otherwise we normalise on the fly. Outputs the full similarity matrix plus the top-k "
         "indices and labels per query — the same kernel a vector retriever uses inside RAG.",
         {def::in("queries", DataType::kTensor, "Query tensor of shape [Q, D] (or [D] for a single query)."),
          def::in("keys", DataType::kTensor, "Key tensor of shape [K, D]."),
          def::in("key_labels", DataType::kList, "Optional list of K labels — used to populate `top_k_labels`.", true)},
         {def::out("similarity", DataType::kTensor,
                   "Float32 tensor of shape [Q, K] — entry [i, j] is cos(query_i, key_j)."),
          def::out("top_k_indices", DataType::kList,
                   "List of length Q; each entry is a list of `top_k` integer key indices, highest similarity first."),
          def::out("top_k_labels", DataType::kList,
                   "List of length Q; each entry is the corresponding key labels (empty when `key_labels` not "
                   "provided).")},
         {def::integer("top_k", 5, "How many nearest keys to surface per query.", 1),
          def::text("exclude_self_words", "",
                    "Comma-separated list of labels to exclude from the top-k. Useful for analogy demos: setting "
                    "'king,man,woman' makes the top-1 surface 'queen' instead of the input words.")}},
        [](NodeContext& ctx) {
          const torch::Tensor q = rows(ctx, "queries"), k = rows(ctx, "keys");
          if (q.size(1) != k.size(1))
            NodeContext::fail_input("keys", "embedding dimension mismatch: queries " + nodes::shape_text(q.sizes()) +
                                                " (D=" + std::to_string(q.size(1)) + "), keys " +
                                                nodes::shape_text(k.sizes()) + " (D=" + std::to_string(k.size(1)) +
                                                ")");
          std::vector<std::string> labels;
          if (const auto* given = ctx.input_if<nlohmann::json>("key_labels")) {
            if (!given->is_array()) NodeContext::fail_input("key_labels", "expected a list of labels");
            for (const auto& l : *given) labels.push_back(l.is_string() ? l.get<std::string>() : l.dump());
            if (!labels.empty() && static_cast<int64_t>(labels.size()) < k.size(0))
              NodeContext::fail_input("key_labels", std::to_string(labels.size()) + " labels for " +
                                                        std::to_string(k.size(0)) + " keys " +
                                                        nodes::shape_text(k.sizes()));
          }
          std::set<std::string> excludes;
          for (const auto& w : util::split_list(ctx.param_string("exclude_self_words")))
            excludes.insert(util::lower(w));
          namespace F = torch::nn::functional;
          const auto unit = F::NormalizeFuncOptions().dim(1).eps(1e-12);
          const torch::Tensor sim = torch::matmul(F::normalize(q, unit), F::normalize(k, unit).t());
          torch::Tensor ranked = sim.clone();
          if (!excludes.empty())
            for (size_t j = 0; j < labels.size() && static_cast<int64_t>(j) < k.size(0); ++j)
              if (excludes.count(util::lower(labels[j])))
                ranked.select(1, static_cast<int64_t>(j)).fill_(-std::numeric_limits<float>::infinity());
          const int64_t top = std::min<int64_t>(ctx.param_int("top_k"), k.size(0));
          nlohmann::json indices = nlohmann::json::array(), top_labels = nlohmann::json::array();
          if (q.size(0) > 0 && top > 0) {
            const torch::Tensor idx = std::get<1>(torch::topk(ranked, top, 1)).contiguous();
            const auto* p = idx.data_ptr<int64_t>();
            for (int64_t i = 0; i < idx.size(0); ++i) {
              nlohmann::json row = nlohmann::json::array(), names = nlohmann::json::array();
              for (int64_t j = 0; j < top; ++j) {
                const int64_t key = p[i * top + j];
                row.push_back(key);
                if (!labels.empty()) names.push_back(labels[static_cast<size_t>(key)]);
              }
              indices.push_back(row);
              top_labels.push_back(names);
            }
          }
          return ValueMap{{"similarity", sim}, {"top_k_indices", indices}, {"top_k_labels", top_labels}};
        });
}

// ----------------------------------------------------------------------------- shapes

void register_shapes(NodeRegistry& r) {
  add_unary(r, "Permute", kTensorOps, "Reorder a tensor's dimensions", "Input tensor", "Permuted tensor",
            {def::text("dims", "0,2,1", "New dimension order as comma-separated ints (e.g. '0,2,1')")},
            [](NodeContext& ctx, const torch::Tensor& t) {
              std::vector<int64_t> dims = nodes::int_list_param(ctx, "dims");
              const int64_t n = t.dim();
              const std::string where = " for a tensor of shape " + nodes::shape_text(t.sizes());
              if (static_cast<int64_t>(dims.size()) != n)
                NodeContext::fail_param("dims", "gives " + std::to_string(dims.size()) + " dimensions" + where +
                                                    ", which has " + std::to_string(n));
              std::set<int64_t> seen;
              for (int64_t d : dims) {
                if (d < -n || d >= n)
                  NodeContext::fail_param("dims", "dimension " + std::to_string(d) + " is out of range" + where);
                if (!seen.insert(d < 0 ? d + n : d).second)
                  NodeContext::fail_param("dims", "dimension " + std::to_string(d) + " appears twice");
              }
              return t.permute(dims);
            });

  r.add({"Reshape",
         "Utility",
         "Reshape a tensor to a specified shape",
         {def::in("tensor", DataType::kTensor, "Input tensor to reshape")},
         {def::out("tensor", DataType::kTensor, "Reshaped tensor")},
         {def::text("shape", "-1,784", "Target shape as comma-separated ints (e.g. '-1,784')")}},
        [](NodeContext& ctx) {
          const torch::Tensor t = nodes::tensor_input(ctx, "tensor");
          const std::vector<int64_t> shape = nodes::int_list_param(ctx, "shape");
          int64_t known = 1, inferred = 0;
          for (int64_t d : shape) {
            if (d == -1)
              ++inferred;
            else if (d < 0)
              NodeContext::fail_param("shape", "sizes must be >= 0 or -1, got " + nodes::shape_text(shape));
            else
              known *= d;
          }
          const bool fits = inferred > 1    ? false
                            : inferred == 1 ? (known != 0 && t.numel() % known == 0)
                                            : known == t.numel();
          if (!fits)
            NodeContext::fail_param("shape", "cannot reshape a tensor of shape " + nodes::shape_text(t.sizes()) + " (" +
                                                 std::to_string(t.numel()) + " elements) to " +
                                                 nodes::shape_text(shape));
          return ValueMap{{"tensor", t.reshape(shape)}};
        });

  r.add({"Flatten",
         "Utility",
         "Flatten a tensor's dimensions from start_dim onward",
         {def::in("tensor", DataType::kTensor, "Input tensor")},
         {def::out("tensor", DataType::kTensor, "Flattened tensor")},
         {def::integer("start_dim", 1, "First dim to flatten")}},
        [](NodeContext& ctx) {
          const torch::Tensor t = nodes::tensor_input(ctx, "tensor");
          const int64_t start = nodes::dim_param(ctx, "start_dim", t.dim(), t.sizes());
          return ValueMap{{"tensor", t.flatten(start)}};
        });

  add_unary(r, "Squeeze", kTensorOps, "Remove size-1 dimensions from a tensor", "Input tensor", "Squeezed tensor",
            {def::integer("dim", -1, "Dimension to squeeze (-1 for all)")},
            [](NodeContext& ctx, const torch::Tensor& t) {
              if (ctx.param_int("dim") == -1) return t.squeeze();  // CodefyUI's -1: every size-1 dimension
              return t.squeeze(nodes::dim_param(ctx, "dim", t.dim(), t.sizes()));
            });

  add_unary(r, "Unsqueeze", kTensorOps, "Insert a size-1 dimension at a position", "Input tensor",
            "Tensor with added dimension", {def::integer("dim", 0, "Dimension at which to insert")},
            [](NodeContext& ctx, const torch::Tensor& t) {
              return t.unsqueeze(nodes::dim_param(ctx, "dim", t.dim(), t.sizes(), 1));
            });

  add_binary(r, "Concat", "Utility", "Concatenate two tensors along a specified dimension", "First input tensor",
             "Second input tensor", "Concatenated output tensor",
             {def::integer("dim", 0, "Dimension along which to concatenate")},
             [](NodeContext& ctx, const torch::Tensor& a, const torch::Tensor& b) {
               const int64_t dim = nodes::dim_param(ctx, "dim", a.dim(), a.sizes());
               nodes::check_concat("tensor_a", a, "tensor_b", b, dim);
               return torch::cat({a, b}, dim);
             });

  add_binary(r, "Stack", kTensorOps, "Join two tensors along a new dimension", "First tensor", "Second tensor",
             "Stacked tensor", {def::integer("dim", 0, "Dimension to stack along")},
             [](NodeContext& ctx, const torch::Tensor& a, const torch::Tensor& b) {
               nodes::check_same_shape("tensor_a", a, "tensor_b", b);
               return torch::stack({a, b}, nodes::dim_param(ctx, "dim", a.dim(), a.sizes(), 1));
             });
}

/// Split's most chunks, as CodefyUI's MAX_CHUNKS.
constexpr int64_t kMaxChunks = 32;

void register_split(NodeRegistry& r) {
  // The definition lists the palette template, chunk_0 and chunk_1 (the
  // default chunks=2); a placed node has chunk_0 .. chunk_{chunks-1}, as
  // CodefyUI grows them on the canvas.
  graph::NodeDef d{
      "Split",
      kTensorOps,
      "Split a tensor into N chunks along a dimension. The number of output ports (chunk_0, chunk_1, ...) "
      "follows the `chunks` param.",
      {def::in("tensor", DataType::kTensor, "Input tensor to split")},
      {def::out("chunk_0", DataType::kTensor, "First chunk"), def::out("chunk_1", DataType::kTensor, "Second chunk")},
      {def::integer(
           "chunks", 2,
           "Number of chunks to split into (1.." + std::to_string(kMaxChunks) + "); also drives output port count", 1,
           kMaxChunks),
       def::integer("dim", 0, "Dimension along which to split")}};
  d.output_family = graph::NodeDef::PortFamily{"chunk_", "chunks", DataType::kTensor};
  r.add(std::move(d), [](NodeContext& ctx) {
    const torch::Tensor t = nodes::tensor_input(ctx, "tensor");
    const int64_t dim = nodes::dim_param(ctx, "dim", t.dim(), t.sizes());
    // torch.chunk: chunks of ceil(size / chunks), so fewer than asked when it does not divide.
    ValueMap out;
    int64_t i = 0;
    for (const torch::Tensor& part : torch::chunk(t, ctx.param_int("chunks"), dim))
      out["chunk_" + std::to_string(i++)] = part;
    return out;
  });
}

}  // namespace

void nodes::register_tensor_nodes(NodeRegistry& r) {
  register_tensor_create(r);
  register_tensor_input(r);
  register_text_input(r);
  register_elementwise(r);
  register_products(r);
  register_cosine_similarity(r);
  register_shapes(r);
  register_split(r);
}

}  // namespace codefy
