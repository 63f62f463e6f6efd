// Classical ML, as CodefyUI's Classical nodes give it: Accuracy, KNN,
// LogisticRegression, DecisionTreeClassifier, SVMClassifier, MLPClassifier.
// Each classifier fits on (x_train, y_train) and labels x_query in one run;
// the models live in train/classic.
#include "nodes/library.h"
#include "nodes/table_values.h"
#include "train/classic.h"

#include <torch/torch.h>

#include <charconv>

namespace codefy {

using graph::DataType;

namespace {

namespace cl = train::classic;
using nodes::read_labels;
using nodes::read_matrix;
using nodes::shape_text;
using nodes::to_list;

/// A classifier's inputs, checked: features [N, F], N labels, queries [M, F].
struct Supervised {
  torch::Tensor x_train, x_query;
  cl::EncodedLabels y;
  int64_t num_classes() const { return static_cast<int64_t>(y.classes.size()); }
};

Supervised read_supervised(const NodeContext& ctx, int64_t min_classes) {
  Supervised s;
  s.x_train = read_matrix(ctx, "x_train");
  const std::vector<std::string> labels = read_labels(ctx, "y_train");
  nodes::check_rows(s.x_train, "x_train", labels.size(), "y_train");
  if (labels.empty()) NodeContext::fail_input("y_train", "is empty: there is nothing to fit");
  s.x_query = read_matrix(ctx, "x_query");
  if (s.x_query.size(1) != s.x_train.size(1))
    NodeContext::fail_input("x_query", "has " + std::to_string(s.x_query.size(1)) + " features (shape " +
                                           shape_text(s.x_query) + ") but x_train has " +
                                           std::to_string(s.x_train.size(1)) + " (shape " + shape_text(s.x_train) +
                                           ")");
  s.y = cl::encode_labels(labels);
  if (s.num_classes() < min_classes)
    NodeContext::fail_input("y_train", "holds " + std::to_string(s.num_classes()) + " class (" + s.y.classes[0] +
                                           "); this classifier needs at least " + std::to_string(min_classes));
  return s;
}

/// Class indices -> the labels they stand for.
nlohmann::json labels_of(const torch::Tensor& index, const std::vector<std::string>& classes) {
  std::vector<std::string> out;
  const torch::Tensor i = index.to(torch::kInt64).contiguous();
  for (int64_t k = 0; k < i.numel(); ++k) out.push_back(classes[i.data_ptr<int64_t>()[k]]);
  return to_list(out);
}

/// A positive number param (C).
double positive_param(const NodeContext& ctx, const std::string& name) {
  const double v = ctx.param_float(name);
  if (!(v > 0)) NodeContext::fail_param(name, "must be greater than 0, got " + nodes::python_number(v));
  return v;
}

std::vector<graph::PortDef> fit_inputs() {
  return {def::in("x_train", DataType::kTensor, "Training features [N, F]."),
          def::in("y_train", DataType::kList, "Training labels (length N)."),
          def::in("x_query", DataType::kTensor, "Query features [M, F].")};
}

void register_accuracy(NodeRegistry& r) {
  r.add({"Accuracy",
         "Classical",
         "Compute classification accuracy between a predictions list and a ground-truth labels list. Outputs the "
         "accuracy as a float (0–1), the count of correct predictions, and the total count.",
         {def::in("predictions", DataType::kList, "Predicted labels (length N)."),
          def::in("labels", DataType::kList, "Ground-truth labels (length N).")},
         {def::out("accuracy", DataType::kScalar, "Accuracy in [0, 1]."),
          def::out("correct", DataType::kScalar, "Number of correct predictions."),
          def::out("total", DataType::kScalar, "Number of samples compared.")},
         {}},
        [](NodeContext& ctx) {
          // Compared as strings, so 0 and "0" agree, as in CodefyUI.
          const auto preds = read_labels(ctx, "predictions");
          const auto labels = read_labels(ctx, "labels");
          if (preds.size() != labels.size())
            NodeContext::fail_input("labels", "has " + std::to_string(labels.size()) + " labels but predictions has " +
                                                  std::to_string(preds.size()));
          double correct = 0;
          for (size_t i = 0; i < preds.size(); ++i) correct += preds[i] == labels[i] ? 1 : 0;
          const auto total = static_cast<double>(preds.size());
          return ValueMap{{"accuracy", total > 0 ? correct / total : 0.0}, {"correct", correct}, {"total", total}};
        });
}

void register_knn(NodeRegistry& r) {
  r.add({"KNN",
         "Classical",
         "k-Nearest-Neighbours classifier (brute force on LibTorch, as sklearn's KNeighborsClassifier decides): "
         "distance weighting and a choice of metrics.",
         fit_inputs(),
         {def::out("predictions", DataType::kList, "Predicted label per query."),
          def::out("probabilities", DataType::kTensor, "Class probabilities [M, C] from the k-NN vote."),
          def::out("classes", DataType::kList, "Class labels in column order (sklearn-sorted).")},
         {def::integer("n_neighbors", 5, "Number of neighbours k.", 1),
          def::select("weights", "uniform", {"uniform", "distance"},
                      "Vote weighting: uniform = each neighbour counts the same; distance = closer neighbours count "
                      "more."),
          def::select("metric", "minkowski", {"minkowski", "euclidean", "manhattan", "chebyshev", "cosine"},
                      "Distance metric. minkowski with default p=2 == euclidean.")}},
        [](NodeContext& ctx) {
          const Supervised s = read_supervised(ctx, 1);
          cl::KnnOptions o;
          o.n_neighbors = std::max<int64_t>(1, std::min(ctx.param_int("n_neighbors"), s.x_train.size(0)));
          o.distance_weights = ctx.param_string("weights") == "distance";
          o.metric = ctx.param_string("metric");
          const cl::Prediction p = cl::knn_predict(s.x_train, s.y.index, s.num_classes(), s.x_query, o);
          return ValueMap{{"predictions", labels_of(p.classes, s.y.classes)},
                          {"probabilities", p.probabilities.to(torch::kFloat32)},
                          {"classes", to_list(s.y.classes)}};
        });
}

void register_logistic_regression(NodeRegistry& r) {
  r.add({"LogisticRegression",
         "Classical",
         "Multinomial logistic regression (sklearn's objective, solved with L-BFGS on LibTorch). Fits a softmax "
         "classifier with L2 / L1 regularisation; same I/O shape as EduLogisticRegression for plug-and-play "
         "swapping.",
         fit_inputs(),
         {def::out("predictions", DataType::kList, "Predicted label per query."),
          def::out("probabilities", DataType::kTensor, "Softmax probabilities [M, C]."),
          def::out("classes", DataType::kList, "Class labels in column order."),
          def::out("coef", DataType::kTensor, "Learned coefficients [C, F].")},
         {def::number("C", 1.0, "Inverse regularisation strength (smaller = more regularised)."),
          def::integer("max_iter", 200, "Maximum solver iterations.", 1),
          def::select("penalty", "l2", {"l2", "l1", "none"},
                      "Regularisation type. l2 and none use L-BFGS, l1 proximal gradient descent.")}},
        [](NodeContext& ctx) {
          const Supervised s = read_supervised(ctx, 2);
          cl::LogisticOptions o;
          o.C = positive_param(ctx, "C");
          o.max_iter = ctx.param_int("max_iter");
          o.penalty = ctx.param_string("penalty");
          const cl::LogisticModel m = cl::fit_logistic(s.x_train, s.y.index, s.num_classes(), o);
          const cl::Prediction p = m.predict(s.x_query);
          return ValueMap{{"predictions", labels_of(p.classes, s.y.classes)},
                          {"probabilities", p.probabilities.to(torch::kFloat32)},
                          {"classes", to_list(s.y.classes)},
                          {"coef", m.coef.to(torch::kFloat32)}};
        });
}

void register_decision_tree(NodeRegistry& r) {
  r.add({"DecisionTreeClassifier",
         "Classical",
         "Recursive feature splits; outputs the learned rules",
         fit_inputs(),
         {def::out("predictions", DataType::kList, "Predicted label per query."),
          def::out("feature_importances", DataType::kTensor, "Importance score per feature [F], summing to 1."),
          def::out("tree_text", DataType::kString, "Human-readable dump of the learned rules."),
          def::out("classes", DataType::kList, "Class labels in sorted order.")},
         {def::integer("max_depth", 5, "Maximum tree depth. 0 = no limit (grow until pure).", 0),
          def::select("criterion", "gini", {"gini", "entropy", "log_loss"},
                      "Split quality function: gini impurity, entropy, or log loss."),
          def::integer("random_state", 42,
                       "Accepted for CodefyUI graphs; features are tried in column order, so equal-quality splits "
                       "go to the first column.")}},
        [](NodeContext& ctx) {
          const Supervised s = read_supervised(ctx, 1);
          cl::TreeOptions o;
          o.max_depth = ctx.param_int("max_depth");
          o.criterion = ctx.param_string("criterion");
          const cl::DecisionTree t = cl::fit_tree(s.x_train, s.y.index, s.num_classes(), o);
          return ValueMap{{"predictions", labels_of(t.predict(s.x_query), s.y.classes)},
                          {"feature_importances", t.feature_importances.to(torch::kFloat32)},
                          {"tree_text", t.to_text(s.y.classes)},
                          {"classes", to_list(s.y.classes)}};
        });
}

void register_svm(NodeRegistry& r) {
  r.add({"SVMClassifier",
         "Classical",
         "Labels queries by a maximum-margin class boundary (LIBSVM's C-SVC, what sklearn's SVC wraps)",
         fit_inputs(),
         {def::out("predictions", DataType::kList, "Predicted label per query."),
          def::out("support_vectors", DataType::kTensor, "Training points on or near the margin [n_sv, F]."),
          def::out("classes", DataType::kList, "Class labels in sorted order.")},
         {def::number("C", 1.0, "Penalty strength; smaller C = wider margin and more violations tolerated."),
          def::select("kernel", "rbf", {"linear", "rbf", "poly", "sigmoid"},
                      "Kernel function: linear hyperplane, gaussian RBF, polynomial, or sigmoid."),
          def::text("gamma", "scale",
                    "Kernel coefficient (rbf/poly/sigmoid). 'scale' uses 1/(F·var(X)); 'auto' uses 1/F; or pass a "
                    "number as a string.")}},
        [](NodeContext& ctx) {
          const Supervised s = read_supervised(ctx, 2);
          cl::SvmOptions o;
          o.C = positive_param(ctx, "C");
          o.kernel = ctx.param_string("kernel");
          o.gamma = ctx.param_string("gamma");
          cl::SvmResult res;
          try {
            res = cl::fit_predict_svm(s.x_train, s.y.index, s.x_query, o);
          } catch (const std::invalid_argument& e) {
            NodeContext::fail_param("gamma", e.what());
          }
          return ValueMap{{"predictions", labels_of(res.predictions, s.y.classes)},
                          {"support_vectors", res.support_vectors},
                          {"classes", to_list(s.y.classes)}};
        });
}

void register_mlp(NodeRegistry& r) {
  r.add({"MLPClassifier",
         "Classical",
         "Feed-forward neural network classifier (sklearn's MLPClassifier recipe on LibTorch). One or more hidden "
         "layers, ReLU/tanh activations, Adam optimiser. Drop-in replacement for the linear classifiers — same I/O "
         "— so the concentric-circles failure → MLP rescue narrative needs only a node-type swap.",
         fit_inputs(),
         {def::out("predictions", DataType::kList, "Predicted label per query."),
          def::out("probabilities", DataType::kTensor, "Softmax probabilities [M, C]."),
          def::out("classes", DataType::kList, "Class labels in column order."),
          def::out("train_loss", DataType::kScalar, "Final training loss.")},
         {def::text("hidden_sizes", "16,16", "Comma-separated hidden layer sizes. '16,16' = two layers of 16 neurons."),
          def::select("activation", "relu", {"relu", "tanh", "logistic", "identity"},
                      "Hidden-layer activation. 'identity' makes the whole network linear — use it to demonstrate "
                      "why activation functions are necessary."),
          def::integer("max_iter", 500, "Maximum training iterations (epochs over the full dataset).", 1),
          def::number("learning_rate_init", 0.01, "Initial learning rate for Adam.", 0.0),
          def::integer("seed", 42, "Random seed for reproducibility.")}},
        [](NodeContext& ctx) {
          const Supervised s = read_supervised(ctx, 2);
          cl::MlpOptions o;
          o.hidden_sizes.clear();
          for (const std::string& item : nodes::split_commas(ctx.param_string("hidden_sizes"))) {
            int64_t v = 0;
            const auto res = std::from_chars(item.data(), item.data() + item.size(), v);
            if (res.ec != std::errc() || res.ptr != item.data() + item.size() || v < 1)
              NodeContext::fail_param("hidden_sizes", "\"" + item + "\" is not a positive whole number");
            o.hidden_sizes.push_back(v);
          }
          if (o.hidden_sizes.empty()) NodeContext::fail_param("hidden_sizes", "must list at least one layer width");
          o.activation = ctx.param_string("activation");
          o.max_iter = ctx.param_int("max_iter");
          o.learning_rate_init = ctx.param_float("learning_rate_init");
          o.seed = static_cast<uint64_t>(ctx.param_int("seed"));
          const cl::MlpResult res = cl::fit_predict_mlp(s.x_train, s.y.index, s.num_classes(), s.x_query, o);
          return ValueMap{{"predictions", labels_of(res.prediction.classes, s.y.classes)},
                          {"probabilities", res.prediction.probabilities.to(torch::kFloat32)},
                          {"classes", to_list(s.y.classes)},
                          {"train_loss", res.train_loss}};
        });
}

}  // namespace

void nodes::register_classic_nodes(NodeRegistry& r) {
  register_accuracy(r);
  register_knn(r);
  register_logistic_regression(r);
  register_decision_tree(r);
  register_svm(r);
  register_mlp(r);
}

}  // namespace codefy
