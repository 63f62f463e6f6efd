// The teaching nodes of CodefyUI's `foundations` plugin pack
// (foundations:Edu-*): classical ML written out step by step, with their
// intermediate tensors in verbose runs. Each node computes what CodefyUI's
// plugin node computes, with the same PyTorch operations in the same order,
// so the numbers (and the discrete choices a tree or a vote makes from them)
// agree with CodefyUI's. Its neural and text nodes are in
// edu_foundations_neural_nodes.cpp, the rl pack in edu_rl_nodes.cpp.
#include "nodes/edu_support.h"
#include "nodes/library.h"
#include "nodes/step_trace.h"
#include "nodes/table_values.h"
#include "nodes/tensor_checks.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace codefy::nodes {
namespace edu_foundations {
namespace {

using namespace edu;

void register_column_stats(NodeRegistry& r) {
  r.add({"foundations:Edu-ColumnStats",
         "Classical",
         "Per-column mean, std, min, max and row count",
         {def::in("table", DataType::kTensor, "2D tensor of shape [rows, columns].")},
         {def::out("means", DataType::kTensor, "Per-column mean, shape [columns]."),
          def::out("stds", DataType::kTensor, "Per-column population std, shape [columns]."),
          def::out("mins", DataType::kTensor, "Per-column min, shape [columns]."),
          def::out("maxs", DataType::kTensor, "Per-column max, shape [columns]."),
          def::out("counts", DataType::kTensor, "Row count repeated for each column, shape [columns].")},
         {def::boolean("unbiased", false,
                       "If true, divide variance by N-1 (sample std). Default is the population std (N) which "
                       "matches what a student computing 'sum of squared deviations / count' would write.")}},
        [](NodeContext& ctx) {
          const Tensor x = edu_tensor(ctx, "table");
          need_rank("table", x, 2, "[rows, columns]");
          if (x.size(0) == 0) bad_input("table", "has zero rows (shape " + shape_of(x) + ")");
          const bool unbiased = ctx.param_bool("unbiased");
          StepRecorder rec(ctx);
          const double n_rows = static_cast<double>(x.size(0));
          rec.record("input", "Start with the 2D table.", {{"table", x}},
                     {{"rows", n_rows}, {"columns", static_cast<double>(x.size(1))}});
          const Tensor col_sum = x.sum(0);
          rec.record("col_sum", "Σ along rows for each column.", {{"col_sum", col_sum}});
          const Tensor counts = torch::full_like(col_sum, n_rows);
          const Tensor means = col_sum / counts;
          rec.record("means", "Divide each column sum by the row count.", {{"means", means}, {"counts", counts}});
          const Tensor deviations = x - means.unsqueeze(0);
          rec.record("deviations", "x − μ for every entry.", {{"deviations", deviations}});
          const Tensor squared = deviations * deviations;
          const double denom = unbiased && n_rows > 1.0 ? n_rows - 1.0 : n_rows;
          const Tensor variances = squared.sum(0) / denom;
          const Tensor stds = variances.sqrt();
          rec.record("stds", "Variance = mean(deviations²) (÷" + fmt_g(denom) + "); std = √variance.",
                     {{"squared", squared}, {"variances", variances}, {"stds", stds}}, {{"denominator", denom}});
          const Tensor mins = std::get<0>(x.min(0)), maxs = std::get<0>(x.max(0));
          rec.record("range", "Per-column min and max for the range.", {{"mins", mins}, {"maxs", maxs}});
          ValueMap out{{"means", means}, {"stds", stds}, {"mins", mins}, {"maxs", maxs}, {"counts", counts}};
          return rec.add_to(out);
        });
}

// ---------------------------------------------------------------------------- Edu-DecisionTree

/// One internal split, in the order the tree was built (pre-order).
struct TreeSplit {
  int64_t depth, feature, n_samples;
  double threshold, impurity_before, gain;
};

/// CodefyUI's hand-written CART: at each node every feature and every
/// midpoint between consecutive distinct values is tried, and the split
/// with the largest strictly positive impurity gain is kept (lowest feature,
/// then lowest threshold, on ties). Impurities are float32 as PyTorch
/// computes them; gains are double, as Python's arithmetic on them is.
class CartBuilder {
 public:
  CartBuilder(const Tensor& x, const std::vector<int64_t>& y, std::string criterion, int64_t max_depth,
              int64_t min_samples_split, int64_t num_classes, const CancellationToken& cancel)
      : x_(x.contiguous()),
        y_(y),
        criterion_(std::move(criterion)),
        max_depth_(max_depth),
        min_split_(min_samples_split),
        num_classes_(num_classes),
        cancel_(cancel) {}

  json build(const std::vector<int64_t>& rows, int64_t depth) {
    cancel_.throw_if_cancelled();
    const int64_t n = static_cast<int64_t>(rows.size());
    std::vector<int64_t> counts(static_cast<size_t>(num_classes_), 0);
    for (int64_t i : rows) ++counts[static_cast<size_t>(y_[static_cast<size_t>(i)])];
    const double impurity = impurity_of(counts, n);
    if (depth >= max_depth_ || n < min_split_ || impurity == 0.0) return leaf(counts, n);
    int64_t feature = -1;
    double threshold = 0.0, gain = 0.0;
    best_split(rows, counts, impurity, feature, threshold, gain);
    if (feature < 0) return leaf(counts, n);
    splits.push_back({depth, feature, n, threshold, impurity, gain});
    std::vector<int64_t> left, right;
    for (int64_t i : rows) (value(i, feature) <= threshold ? left : right).push_back(i);
    json l = build(left, depth + 1);
    json rt = build(right, depth + 1);
    return json{{"feature", feature}, {"threshold", threshold}, {"impurity", impurity},  {"gain", gain},
                {"n_samples", n},     {"left", std::move(l)},   {"right", std::move(rt)}};
  }

  std::vector<TreeSplit> splits;

 private:
  double value(int64_t row, int64_t feature) const {
    return static_cast<double>(x_.data_ptr<float>()[row * x_.size(1) + feature]);
  }

  /// gini = 1 − Σ p², entropy = −Σ p log2 p over the classes present, in float32.
  double impurity_of(const std::vector<int64_t>& counts, int64_t n) const {
    if (n == 0) return 0.0;
    std::vector<float> present;
    for (int64_t c : counts)
      if (c > 0) present.push_back(static_cast<float>(c));
    const Tensor probs = torch::tensor(present) / static_cast<double>(n);
    if (criterion_ == "entropy") return static_cast<double>((-(probs * torch::log2(probs)).sum()).item<float>());
    return static_cast<double>((1.0 - (probs * probs).sum()).item<float>());
  }

  void best_split(const std::vector<int64_t>& rows, const std::vector<int64_t>& counts, double parent,
                  int64_t& best_feature, double& best_threshold, double& best_gain) const {
    const int64_t n = static_cast<int64_t>(rows.size());
    const int64_t features = x_.size(1);
    for (int64_t f = 0; f < features; ++f) {
      cancel_.throw_if_cancelled();
      std::vector<std::pair<float, int64_t>> sorted;  // (value, label), ascending by value
      sorted.reserve(rows.size());
      for (int64_t i : rows) sorted.emplace_back(static_cast<float>(value(i, f)), y_[static_cast<size_t>(i)]);
      std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<float> uniques;
      for (const auto& [v, label] : sorted)
        if (uniques.empty() || uniques.back() != v) uniques.push_back(v);
      if (uniques.size() < 2) continue;  // a constant feature cannot split
      std::vector<int64_t> left(counts.size(), 0), right = counts;
      size_t taken = 0;  // rows of `sorted` already on the left
      for (size_t u = 0; u + 1 < uniques.size(); ++u) {
        const float mid = (uniques[u] + uniques[u + 1]) / 2.0f;  // float32, as torch computes the midpoints
        const double thr = static_cast<double>(mid);
        while (taken < sorted.size() && static_cast<double>(sorted[taken].first) <= thr) {
          ++left[static_cast<size_t>(sorted[taken].second)];
          --right[static_cast<size_t>(sorted[taken].second)];
          ++taken;
        }
        const int64_t n_left = static_cast<int64_t>(taken), n_right = n - n_left;
        if (n_left == 0 || n_right == 0) continue;
        const double weighted = (static_cast<double>(n_left) / static_cast<double>(n)) * impurity_of(left, n_left) +
                                (static_cast<double>(n_right) / static_cast<double>(n)) * impurity_of(right, n_right);
        const double gain = parent - weighted;
        if (gain > best_gain) {
          best_gain = gain;
          best_feature = f;
          best_threshold = thr;
        }
      }
    }
  }

  /// A leaf predicts the majority class (the lowest label on ties).
  static json leaf(const std::vector<int64_t>& counts, int64_t n) {
    int64_t best = -1, best_count = -1;
    json class_counts = json::object();
    for (size_t c = 0; c < counts.size(); ++c) {
      if (counts[c] == 0) continue;
      class_counts[std::to_string(c)] = counts[c];
      if (counts[c] > best_count) {
        best_count = counts[c];
        best = static_cast<int64_t>(c);
      }
    }
    return json{{"leaf", true}, {"prediction", best}, {"n_samples", n}, {"class_counts", std::move(class_counts)}};
  }

  Tensor x_;
  const std::vector<int64_t>& y_;
  std::string criterion_;
  int64_t max_depth_, min_split_, num_classes_;
  const CancellationToken& cancel_;
};

int64_t tree_nodes(const json& node) {
  if (node.contains("leaf")) return 1;
  return 1 + tree_nodes(node["left"]) + tree_nodes(node["right"]);
}

/// Edges on the longest root-to-leaf path (a single leaf: 0).
int64_t tree_depth(const json& node) {
  if (node.contains("leaf")) return 0;
  return 1 + std::max(tree_depth(node["left"]), tree_depth(node["right"]));
}

void register_decision_tree(NodeRegistry& r) {
  r.add({"foundations:Edu-DecisionTree",
         "Classical",
         "Hand-written CART classification tree (binary splits, Gini or entropy). For every internal node it "
         "exposes the chosen feature, threshold, impurity before/after the split, and the information gain, plus "
         "the final nested-dict tree structure. Deterministic tie-breaking (lowest feature index, then lowest "
         "threshold).",
         train_query_inputs(DataType::kTensor, "Training features [N, D].",
                            "Training labels [N] (integer class labels, any number of classes).",
                            "Query features [M, D] to classify."),
         {def::out("predictions", DataType::kTensor, "Predicted integer class label per query, [M]."),
          def::out("tree", DataType::kAny,
                   "JSON-serialisable nested dict. Internal node: {feature, threshold, impurity, gain, n_samples, "
                   "left, right}. Leaf: {leaf: true, prediction, n_samples, class_counts}. Left = samples with "
                   "x[feature] <= threshold."),
          def::out("node_count", DataType::kTensor, "Scalar count of nodes in the tree (display-only).")},
         {def::integer("max_depth", 3, "Maximum tree depth. The root is depth 0.", 1),
          def::integer("min_samples_split", 2, "A node with fewer than this many samples becomes a leaf.", 2),
          def::select("criterion", "gini", {"gini", "entropy"},
                      "Impurity measure. gini = 1 − Σ p²; entropy = − Σ p log2 p.")}},
        [](NodeContext& ctx) {
          const Tensor x_train = cpu_tensor(ctx, "x_train");
          const Tensor y_train = cpu_tensor(ctx, "y_train", torch::kInt64).reshape(-1);
          const Tensor x_query = cpu_tensor(ctx, "x_query");
          need_rank("x_train", x_train, 2, "[N, D]");
          need_rank("x_query", x_query, 2, "[M, D]");
          const int64_t n_train = x_train.size(0);
          if (n_train == 0) bad_input("x_train", "is empty (shape " + shape_of(x_train) + "): nothing to fit");
          if (y_train.size(0) != n_train)
            bad_input("y_train", "length mismatch: x_train has " + num(n_train) + " rows (shape " + shape_of(x_train) +
                                     ") but y_train has " + num(y_train.size(0)) + " labels");
          need_same_features(x_train, x_query);
          if ((y_train < 0).any().item<bool>()) bad_input("y_train", "must contain non-negative integer class labels");
          const int64_t max_depth = ctx.param_int("max_depth"), min_split = ctx.param_int("min_samples_split");
          const std::string criterion = ctx.param_string("criterion");
          if (max_depth < 1) bad_param("max_depth", "must be >= 1; got " + num(max_depth));
          if (min_split < 2) bad_param("min_samples_split", "must be >= 2; got " + num(min_split));
          if (criterion != "gini" && criterion != "entropy")
            bad_param("criterion", "unknown criterion '" + criterion + "' (expected 'gini' or 'entropy')");
          const int64_t num_classes = y_train.max().item<int64_t>() + 1;
          if (num_classes > n_train + 1024)
            bad_input("y_train", "labels go up to " + num(num_classes - 1) + ", far more classes than the " +
                                     num(n_train) + " samples; use class indices 0..C-1");
          std::vector<int64_t> y(static_cast<size_t>(n_train)), rows(static_cast<size_t>(n_train));
          const Tensor y_flat = y_train.contiguous();
          for (int64_t i = 0; i < n_train; ++i) {
            y[static_cast<size_t>(i)] = y_flat.data_ptr<int64_t>()[i];
            rows[static_cast<size_t>(i)] = i;
          }
          CartBuilder builder(x_train, y, criterion, max_depth, min_split, num_classes, ctx.cancel());
          const json tree = builder.build(rows, 0);
          const int64_t node_count = tree_nodes(tree), depth = tree_depth(tree);
          // Predict: follow x[feature] <= threshold to a leaf.
          const Tensor q = x_query.contiguous();
          std::vector<int64_t> predictions;
          for (int64_t i = 0; i < q.size(0); ++i) {
            const json* node = &tree;
            while (!node->contains("leaf")) {
              const double v =
                  static_cast<double>(q.data_ptr<float>()[i * q.size(1) + (*node)["feature"].get<int64_t>()]);
              node = v <= (*node)["threshold"].get<double>() ? &(*node)["left"] : &(*node)["right"];
            }
            predictions.push_back((*node)["prediction"].get<int64_t>());
          }
          StepRecorder rec(ctx);
          for (const TreeSplit& s : builder.splits)
            rec.record("split_d" + num(s.depth),
                       "depth " + num(s.depth) + ": split on feature " + num(s.feature) +
                           " at x <= " + fmt_g(s.threshold, 4) + " (gain " + fmt_g(s.gain, 4) + ", " + criterion + ").",
                       {},
                       {{"feature", static_cast<double>(s.feature)},
                        {"threshold", s.threshold},
                        {"impurity_before", s.impurity_before},
                        {"impurity_after", s.impurity_before - s.gain},
                        {"gain", s.gain},
                        {"n_samples", static_cast<double>(s.n_samples)}});
          rec.record("tree",
                     "Built a " + criterion + " tree with " + num(node_count) + " nodes, depth " + num(depth) + ".", {},
                     {{"node_count", static_cast<double>(node_count)}, {"depth", static_cast<double>(depth)}});
          ValueMap out{{"predictions", torch::tensor(predictions, torch::kInt64)},
                       {"tree", tree},
                       {"node_count", torch::scalar_tensor(node_count, torch::kInt64)}};
          return rec.add_to(out);
        });
}

// ---------------------------------------------------------------------------- Edu-KNN

void register_knn(NodeRegistry& r) {
  r.add({"foundations:Edu-KNN",
         "Classical",
         "Hand-written k-NN classifier. Computes per-query distances to all training points, picks the k smallest, "
         "votes by majority. Outputs the distances and neighbour indices so a viz can draw lines from each query to "
         "its k nearest training samples.",
         train_query_inputs(DataType::kList, "Training features [N_train, F].", "Training labels (length N_train).",
                            "Query features [N_query, F] to classify."),
         {def::out("predictions", DataType::kList, "Predicted label per query (length N_query)."),
          def::out("distances", DataType::kTensor, "Top-k distances per query, [N_query, k]."),
          def::out("neighbor_indices", DataType::kList,
                   "List of length N_query; each entry is the k nearest training indices (sorted closest-first)."),
          def::out("train_coords", DataType::kTensor,
                   "Pass-through of x_train so the viz can plot training points alongside neighbour lines."),
          def::out("query_coords", DataType::kTensor, "Pass-through of x_query so the viz can plot query points."),
          def::out("train_labels", DataType::kList,
                   "Pass-through of y_train so the viz can colour-code training classes.")},
         {def::integer("k", 5, "Number of nearest neighbours to consider. Clamped to N_train when too large.", 1),
          def::select("metric", "euclidean", {"euclidean", "manhattan", "cosine"},
                      "Distance metric. Cosine returns 1 - cos(query, train).")}},
        [](NodeContext& ctx) {
          const Tensor x_train = cpu_tensor(ctx, "x_train");
          const Tensor x_query = cpu_tensor(ctx, "x_query");
          need_rank("x_train", x_train, 2, "[N_train, F]");
          need_rank("x_query", x_query, 2, "[N_query, F]");
          const std::vector<std::string> labels = read_labels(ctx, "y_train");
          if (x_train.size(0) != static_cast<int64_t>(labels.size()))
            bad_input("y_train", "length mismatch: x_train has " + num(x_train.size(0)) + " rows (shape " +
                                     shape_of(x_train) + ") but y_train has " +
                                     num(static_cast<int64_t>(labels.size())) + " labels");
          if (x_train.size(0) == 0)
            bad_input("x_train", "has no rows (shape " + shape_of(x_train) + "): no neighbours");
          need_same_features(x_train, x_query);
          const std::string metric = ctx.param_string("metric");
          if (metric != "euclidean" && metric != "manhattan" && metric != "cosine")
            bad_param("metric", "unknown metric '" + metric + "'");
          const int64_t n_train = x_train.size(0), n_query = x_query.size(0);
          const int64_t k = std::max<int64_t>(1, std::min(ctx.param_int("k"), n_train));
          const double pairs = static_cast<double>(n_query) * static_cast<double>(n_train);
          if (pairs * (metric == "cosine" ? 1.0 : static_cast<double>(std::max<int64_t>(1, x_train.size(1)))) >
              static_cast<double>(kMaxElements))
            bad_input("x_query", "[" + num(n_query) + " queries x " + num(n_train) + " train x " +
                                     num(x_train.size(1)) +
                                     " features] pairwise distances are too many for the "
                                     "hand-written k-NN (at most 2^28 values); use the KNN node");
          Tensor distances;
          if (metric == "cosine") {
            namespace F = torch::nn::functional;
            const Tensor q = F::normalize(x_query, F::NormalizeFuncOptions().dim(-1).eps(1e-12));
            const Tensor t = F::normalize(x_train, F::NormalizeFuncOptions().dim(-1).eps(1e-12));
            distances = 1.0 - q.matmul(t.t());
          } else {
            const Tensor diff = x_query.unsqueeze(1) - x_train.unsqueeze(0);
            distances = metric == "euclidean" ? row_norms(diff) : torch::sum(torch::abs(diff), -1);
          }
          const auto [topk_d, topk_idx] = torch::topk(distances, k, 1, /*largest=*/false, /*sorted=*/true);
          // Majority vote, closest first; a tie goes to the label seen first (the nearer neighbour).
          json predictions = json::array(), neighbours = json::array();
          const Tensor idx = topk_idx.contiguous();
          for (int64_t i = 0; i < n_query; ++i) {
            std::vector<std::pair<std::string, int64_t>> votes;
            json row = json::array();
            for (int64_t j = 0; j < k; ++j) {
              const int64_t t = idx.data_ptr<int64_t>()[i * k + j];
              row.push_back(t);
              const std::string& label = labels[static_cast<size_t>(t)];
              auto it = std::find_if(votes.begin(), votes.end(), [&](const auto& v) { return v.first == label; });
              if (it == votes.end())
                votes.emplace_back(label, 1);
              else
                ++it->second;
            }
            auto best = votes.begin();
            for (auto it = votes.begin(); it != votes.end(); ++it)
              if (it->second > best->second) best = it;
            predictions.push_back(best->first);
            neighbours.push_back(std::move(row));
          }
          StepRecorder rec(ctx);
          rec.record("compute_distances",
                     "Pairwise " + metric + " distances [" + num(n_query) + " queries × " + num(n_train) + " train].",
                     {{"distances", distances}});
          rec.record("topk", "Pick the k=" + num(k) + " nearest neighbours per query.",
                     {{"topk_distances", topk_d}, {"topk_indices", topk_idx}});
          rec.record("vote", "Majority vote among the k nearest labels.", {},
                     {{"k", static_cast<double>(k)},
                      {"n_classes", static_cast<double>(std::set<std::string>(labels.begin(), labels.end()).size())}});
          ValueMap out{{"predictions", predictions},     {"distances", topk_d},
                       {"neighbor_indices", neighbours}, {"train_coords", x_train},
                       {"query_coords", x_query},        {"train_labels", list_value(ctx, "y_train")}};
          return rec.add_to(out);
        });
}

// ---------------------------------------------------------------------------- Edu-LinearRegression

void register_linear_regression(NodeRegistry& r) {
  r.add({"foundations:Edu-LinearRegression",
         "Classical",
         "Fits $y=Xw+b$ by closed form or gradient descent",
         train_query_inputs(DataType::kTensor, "Training features [N, F].", "Training targets [N] or [N, 1].",
                            "Query features [M, F] to predict."),
         {def::out("predictions", DataType::kTensor, "Predicted y values [M]."),
          def::out("weights", DataType::kTensor, "Learned weight vector [F]."),
          def::out("bias", DataType::kTensor, "Learned scalar bias.")},
         {def::select("method", "closed_form", {"closed_form", "gradient_descent"},
                      "closed_form solves the normal equation; gradient_descent runs iterative updates."),
          def::number("lr", 0.01, "Step size for gradient descent. Ignored for closed_form."),
          def::integer("epochs", 100, "Number of GD iterations. Ignored for closed_form."),
          def::number("regularization", 0.0, "L2 (ridge) regularisation strength λ.")}},
        [](NodeContext& ctx) {
          const Tensor x_train = cpu_tensor(ctx, "x_train");
          const Tensor y_train = cpu_tensor(ctx, "y_train").squeeze();
          const Tensor x_query = cpu_tensor(ctx, "x_query");
          need_rank("x_train", x_train, 2, "[N, F]");
          if (y_train.dim() != 1)
            bad_input("y_train", "must be targets [N] or [N, 1]; got " + num(y_train.dim()) +
                                     "-D after squeezing (shape " + shape_of(y_train) + ")");
          if (x_train.size(0) != y_train.size(0))
            bad_input("y_train", "features and targets length mismatch: x_train has " + num(x_train.size(0)) +
                                     " rows (shape " + shape_of(x_train) + ") but y_train has " + num(y_train.size(0)) +
                                     " targets");
          need_rank("x_query", x_query, 2, "[M, F]");
          need_same_features(x_train, x_query);
          const std::string method = ctx.param_string("method");
          const double lam = ctx.param_float("regularization");
          const int64_t n_features = x_train.size(1);
          Tensor weights, bias;
          if (method == "closed_form") {
            if (static_cast<double>(n_features + 1) * static_cast<double>(n_features + 1) >
                static_cast<double>(kMaxElements))
              bad_input("x_train", "has " + num(n_features) +
                                       " features; the normal equation's [F+1, F+1] matrix "
                                       "would be too large (use gradient_descent)");
            const Tensor x_aug = torch::cat({x_train, torch::ones({x_train.size(0), 1})}, 1);
            // Ridge on the weights only, not on the bias.
            Tensor reg = lam * torch::eye(n_features + 1);
            reg.index_put_({n_features, n_features}, 0.0);
            const Tensor a = x_aug.t().matmul(x_aug) + reg;
            const Tensor b = x_aug.t().matmul(y_train);
            Tensor theta;
            try {
              theta = at::linalg_solve(a, b);
            } catch (const c10::Error&) {
              // A singular matrix: least squares instead, as CodefyUI falls back to.
              theta = std::get<0>(at::linalg_lstsq(a, b));
            }
            weights = theta.slice(0, 0, n_features);
            bias = theta[n_features];
          } else if (method == "gradient_descent") {
            const double lr = ctx.param_float("lr");
            const int64_t epochs = std::max<int64_t>(1, ctx.param_int("epochs"));
            const double n = static_cast<double>(x_train.size(0));
            weights = torch::zeros({n_features});
            bias = torch::zeros({});
            for (int64_t e = 0; e < epochs; ++e) {
              if (e % 64 == 0) ctx.cancel().throw_if_cancelled();
              const Tensor err = x_train.matmul(weights) + bias - y_train;
              // (2/n) * X^T @ err: the scale applies to X^T first, as Python's left-to-right evaluation does.
              const Tensor grad_w = ((2.0 / n) * x_train.t()).matmul(err) + (2.0 * lam) * weights;
              const Tensor grad_b = (2.0 / n) * err.sum();
              weights = weights - lr * grad_w;
              bias = bias - lr * grad_b;
            }
          } else {
            bad_param("method", "unknown method '" + method + "'");
          }
          const Tensor predictions = x_query.matmul(weights) + bias;
          StepRecorder rec(ctx);
          rec.record("fit", "Solve via " + method + ".", {{"weights", weights}, {"bias", bias}},
                     {{"lambda", lam}, {"n_features", static_cast<double>(n_features)}});
          rec.record("predict", "y_pred = X_query @ w + b", {{"predictions", predictions}});
          ValueMap out{{"predictions", predictions}, {"weights", weights}, {"bias", bias}};
          return rec.add_to(out);
        });
}

// ---------------------------------------------------------------------------- Edu-LogisticRegression

/// Row-wise softmax with the row maximum subtracted first.
Tensor stable_softmax(const Tensor& logits) {
  const Tensor shifted = logits - std::get<0>(logits.max(1, true));
  const Tensor e = torch::exp(shifted);
  return e / e.sum(1, true);
}

std::string python_list(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", '" : "'") + items[i] + "'";
  return s + "]";
}

void register_logistic_regression(NodeRegistry& r) {
  r.add({"foundations:Edu-LogisticRegression",
         "Classical",
         "Softmax by gradient descent: labels and probabilities",
         train_query_inputs(DataType::kList, "Training features [N, F].", "Training labels (length N).",
                            "Query features [M, F] to classify."),
         {def::out("predictions", DataType::kList, "Predicted labels per query."),
          def::out("probabilities", DataType::kTensor, "Softmax probabilities [M, C]."),
          def::out("weights", DataType::kTensor, "Learned weight matrix [F, C]."),
          def::out("bias", DataType::kTensor, "Learned bias vector [C]."),
          def::out("classes", DataType::kList, "Unique class labels in column order.")},
         {def::number("lr", 0.1, "Gradient-descent step size."), def::integer("epochs", 200, "Training iterations."),
          def::number("regularization", 0.0, "L2 weight decay strength λ.")}},
        [](NodeContext& ctx) {
          const Tensor x_train = cpu_tensor(ctx, "x_train");
          const Tensor x_query = cpu_tensor(ctx, "x_query");
          need_rank("x_train", x_train, 2, "[N, F]");
          need_rank("x_query", x_query, 2, "[M, F]");
          const std::vector<std::string> labels = read_labels(ctx, "y_train");
          if (x_train.size(0) != static_cast<int64_t>(labels.size()))
            bad_input("y_train", "features/labels length mismatch: x_train has " + num(x_train.size(0)) +
                                     " rows (shape " + shape_of(x_train) + ") but y_train has " +
                                     num(static_cast<int64_t>(labels.size())) + " labels");
          need_same_features(x_train, x_query);
          const std::set<std::string> distinct(labels.begin(), labels.end());
          const std::vector<std::string> classes(distinct.begin(), distinct.end());  // sorted, as Python sorts str
          if (classes.size() < 2) bad_input("y_train", "need at least 2 classes, got " + python_list(classes));
          std::map<std::string, int64_t> index;
          for (size_t c = 0; c < classes.size(); ++c) index[classes[c]] = static_cast<int64_t>(c);
          std::vector<int64_t> y;
          y.reserve(labels.size());
          for (const auto& l : labels) y.push_back(index[l]);
          const Tensor y_idx = torch::tensor(y, torch::kInt64);
          const int64_t n_features = x_train.size(1), n_classes = static_cast<int64_t>(classes.size());
          if (static_cast<double>(n_features) * static_cast<double>(n_classes) > static_cast<double>(kMaxElements))
            bad_input("y_train", num(n_classes) + " classes x " + num(n_features) + " features is too many weights");
          const double lr = ctx.param_float("lr"), lam = ctx.param_float("regularization");
          const int64_t epochs = std::max<int64_t>(1, ctx.param_int("epochs"));
          const double n = static_cast<double>(x_train.size(0));
          Tensor weights = torch::zeros({n_features, n_classes}), bias = torch::zeros({n_classes});
          for (int64_t e = 0; e < epochs; ++e) {
            if (e % 64 == 0) ctx.cancel().throw_if_cancelled();
            const Tensor probs = stable_softmax(x_train.matmul(weights) + bias);
            // Cross-entropy's gradient with respect to the logits: probs − one_hot(y).
            const Tensor one_hot = torch::zeros_like(probs).scatter_(1, y_idx.unsqueeze(1), 1.0);
            const Tensor err = probs - one_hot;
            const Tensor grad_w = ((1.0 / n) * x_train.t()).matmul(err) + (2.0 * lam) * weights;
            const Tensor grad_b = (1.0 / n) * err.sum(0);
            weights = weights - lr * grad_w;
            bias = bias - lr * grad_b;
          }
          const Tensor query_logits = x_query.matmul(weights) + bias;
          const Tensor query_probs = stable_softmax(query_logits);
          const Tensor pred = query_probs.argmax(1).contiguous();
          json predictions = json::array();
          for (int64_t i = 0; i < pred.numel(); ++i)
            predictions.push_back(classes[static_cast<size_t>(pred.data_ptr<int64_t>()[i])]);
          StepRecorder rec(ctx);
          rec.record(
              "fit",
              "Trained " + num(epochs) + " epochs at lr=" + py_float(lr) + "; classes=" + python_list(classes) + ".",
              {{"weights", weights}, {"bias", bias}},
              {{"lr", lr}, {"epochs", static_cast<double>(epochs)}, {"lambda", lam}});
          rec.record("predict", "Softmax over query logits; argmax → predicted class.",
                     {{"logits", query_logits}, {"probabilities", query_probs}});
          ValueMap out{{"predictions", predictions},
                       {"probabilities", query_probs},
                       {"weights", weights},
                       {"bias", bias},
                       {"classes", to_list(classes)}};
          return rec.add_to(out);
        });
}

// ---------------------------------------------------------------------------- Edu-SVM

/// At most this many epochs are recorded in a verbose run, evenly spaced.
constexpr int64_t kMaxEpochSnapshots = 8;

void register_svm(NodeRegistry& r) {
  r.add({"foundations:Edu-SVM",
         "Classical",
         "Hand-written linear soft-margin SVM trained by sub-gradient descent on the hinge loss ½‖w‖² + "
         "C·mean(max(0, 1 − y·(w·x+b))). Binary labels are mapped to ±1 internally and predictions returned in the "
         "original label space. Exposes weights, bias, the support-vector mask (margin < 1), and the raw decision "
         "values w·x+b for visualising the hyperplane and margins.",
         train_query_inputs(DataType::kTensor, "Training features [N, D].",
                            "Training labels [N] with EXACTLY two distinct values. The lower value maps to −1, the "
                            "higher to +1 internally.",
                            "Query features [M, D] to classify."),
         {def::out("predictions", DataType::kTensor, "Predicted label per query [M], in the original label space."),
          def::out("weights", DataType::kTensor, "Learned weight vector [D]."),
          def::out("bias", DataType::kTensor, "Learned scalar bias."),
          def::out("support_vectors", DataType::kTensor,
                   "Boolean mask [N]; True where the train margin y·(w·x+b) < 1 (support vectors). Display-only."),
          def::out("decision_values", DataType::kTensor,
                   "Raw decision function w·x_query + b, shape [M]. Display-only.")},
         {def::number("C", 1.0,
                      "Soft-margin penalty. Larger C punishes margin violations harder (narrower margin, fewer "
                      "mistakes); smaller C tolerates more violations for a wider margin.",
                      0.0),
          def::number("lr", 0.01, "Sub-gradient descent step size.", 0.0),
          def::integer("epochs", 100, "Number of full-batch sub-gradient descent steps.", 1)}},
        [](NodeContext& ctx) {
          const Tensor x_train = cpu_tensor(ctx, "x_train");
          const Tensor y_train = cpu_tensor(ctx, "y_train", std::nullopt).flatten();
          const Tensor x_query = cpu_tensor(ctx, "x_query");
          need_rank("x_train", x_train, 2, "[N, D]");
          need_rank("x_query", x_query, 2, "[M, D]");
          const int64_t n_samples = x_train.size(0), n_features = x_train.size(1);
          if (y_train.size(0) != n_samples)
            bad_input("y_train", "length mismatch: x_train has " + num(n_samples) + " rows (shape " +
                                     shape_of(x_train) + ") but y_train has " + num(y_train.size(0)) + " labels");
          need_same_features(x_train, x_query);
          const double c = ctx.param_float("C"), lr = ctx.param_float("lr");
          const int64_t epochs = ctx.param_int("epochs");
          if (c < 0) bad_param("C", "must be >= 0; got " + py_float(c));
          if (lr < 0) bad_param("lr", "must be >= 0; got " + py_float(lr));
          if (epochs < 1) bad_param("epochs", "must be >= 1; got " + num(epochs));
          // Exactly two classes: the lower maps to −1, the higher to +1.
          const Tensor classes = std::get<0>(at::_unique2(y_train, /*sorted=*/true, false, false));
          if (classes.numel() != 2) {
            std::string listed;
            const Tensor d = classes.to(torch::kFloat64);
            for (int64_t i = 0; i < std::min<int64_t>(d.numel(), 10); ++i)
              listed +=
                  (i ? ", " : "") + (classes.is_floating_point() ? py_float(d[i].item<double>())
                                                                 : num(static_cast<int64_t>(d[i].item<double>())));
            bad_input("y_train", "must have exactly 2 distinct classes; got " + num(classes.numel()) + " ([" + listed +
                                     (classes.numel() > 10 ? ", ..." : "") + "])");
          }
          const Tensor neg_class = classes[0], pos_class = classes[1];
          const Tensor y_pm1 = torch::where(y_train == pos_class, torch::ones({n_samples}), -torch::ones({n_samples}));
          StepRecorder rec(ctx);
          Tensor w = torch::zeros({n_features}), b = torch::zeros({});
          rec.record("init",
                     "Initialise w = 0 (shape [D]) and b = 0; objective is ½‖w‖² + C·mean(max(0, 1 − y·(w·x+b))).",
                     {{"w", w}},
                     {{"C", c},
                      {"lr", lr},
                      {"epochs", static_cast<double>(epochs)},
                      {"n_features", static_cast<double>(n_features)},
                      {"n_samples", static_cast<double>(n_samples)}});
          std::set<int64_t> snapshots;
          if (rec.on()) {
            const int64_t n_snap = std::min(kMaxEpochSnapshots, epochs);
            for (int64_t s = 0; s < n_snap; ++s) {
              // Python's round(): halves go to the even neighbour.
              const auto idx = static_cast<int64_t>(
                  std::nearbyint(static_cast<double>((s + 1) * epochs) / static_cast<double>(n_snap)));
              snapshots.insert(std::max<int64_t>(1, std::min(epochs, idx)));
            }
          }
          for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
            if (epoch % 64 == 0) ctx.cancel().throw_if_cancelled();
            const Tensor margins = y_pm1 * (x_train.matmul(w) + b);
            const Tensor hinge = torch::clamp(1.0 - margins, 0.0);
            const Tensor violating = margins < 1.0;
            const Tensor viol_y = violating.to(torch::kFloat32) * y_pm1;
            const Tensor dw = w - c * (viol_y.unsqueeze(1) * x_train).mean(0);
            const Tensor db = -c * viol_y.mean();
            w = w - lr * dw;
            b = b - lr * db;
            if (snapshots.count(epoch)) {
              const Tensor loss = 0.5 * w.dot(w) + c * hinge.mean();
              rec.record("epoch_" + num(epoch),
                         "Sub-gradient step: dw = w − C·mean(violating·y·x); db = −C·mean(violating·y); then w ← w − "
                         "lr·dw, b ← b − lr·db.",
                         {{"w", w}},
                         {{"epoch", static_cast<double>(epoch)},
                          {"loss", static_cast<double>(loss.item<float>())},
                          {"num_support_vectors", static_cast<double>(violating.sum().item<int64_t>())}});
            }
          }
          const Tensor support_vectors = y_pm1 * (x_train.matmul(w) + b) < 1.0;
          const Tensor decision_values = x_query.matmul(w) + b;
          const Tensor predictions = torch::where(decision_values >= 0, pos_class.to(decision_values.scalar_type()),
                                                  neg_class.to(decision_values.scalar_type()));
          rec.record("decision",
                     "Final hyperplane: predictions = sign(w·x_query + b) mapped back to the original labels; support "
                     "vectors are train points with margin y·(w·x+b) < 1.",
                     {{"weights", w}, {"support_vectors", support_vectors}, {"decision_values", decision_values}},
                     {{"bias", static_cast<double>(b.item<float>())},
                      {"weight_norm", static_cast<double>(w.norm().item<float>())},
                      {"num_support_vectors", static_cast<double>(support_vectors.sum().item<int64_t>())}});
          ValueMap out{{"predictions", predictions},
                       {"weights", w},
                       {"bias", b},
                       {"support_vectors", support_vectors},
                       {"decision_values", decision_values}};
          return rec.add_to(out);
        });
}

}  // namespace
}  // namespace edu_foundations

void register_edu_foundations_nodes(NodeRegistry& r) {
  using namespace edu_foundations;
  register_column_stats(r);
  register_decision_tree(r);
  register_knn(r);
  register_linear_regression(r);
  register_logistic_regression(r);
  register_svm(r);
  register_neural_nodes(r);
}

}  // namespace codefy::nodes
