// Classical machine learning on LibTorch tensors, as scikit-learn does it:
// numpy's legacy random generator (so seeded data and splits repeat
// scikit-learn's exactly), its toy data generators, train/test splits,
// k-nearest neighbours, logistic regression, CART trees, a multi-layer
// perceptron, and support vector classification through LIBSVM. No graphs.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/types.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace codefy::train::classic {

/// numpy's legacy `RandomState(seed)`: MT19937 seeded as numpy seeds it,
/// with its double, Gaussian (polar method, second value cached), bounded
/// integer and shuffle algorithms, so the same seed gives numpy's draws.
class NumpyRandom {
 public:
  explicit NumpyRandom(uint32_t seed) : mt_(seed) {}
  uint32_t next_uint32() { return static_cast<uint32_t>(mt_()); }
  /// `random_sample()`: a double in [0, 1) from 53 random bits.
  double random_sample();
  /// `uniform(low, high)`.
  double uniform(double low, double high) { return low + (high - low) * random_sample(); }
  /// `standard_normal()` (legacy gauss).
  double gauss();
  /// `normal(loc, scale)`.
  double normal(double loc, double scale) { return loc + scale * gauss(); }
  /// A uniform integer in [0, max] by masked rejection (numpy's random_interval).
  uint64_t interval(uint64_t max);
  /// `shuffle(v)` of a 1-D array: Fisher-Yates from the end.
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i-- > 1;) std::swap(v[i], v[interval(i)]);
  }
  /// `permutation(n)`.
  std::vector<int64_t> permutation(int64_t n);

 private:
  std::mt19937 mt_;
  bool has_gauss_ = false;
  double gauss_ = 0.0;
};

/// Generated 2-D points (float64 [N, 2]) and their class per point.
struct Points {
  torch::Tensor x;
  std::vector<int64_t> y;
};

/// scikit-learn's make_moons(n_samples, noise, random_state=seed), shuffled.
Points make_moons(int64_t n_samples, double noise, uint32_t seed);
/// make_circles(n_samples, noise, factor, random_state=seed), shuffled.
Points make_circles(int64_t n_samples, double noise, double factor, uint32_t seed);
/// make_blobs(n_samples, centers, n_features=2, cluster_std, random_state=seed):
/// centers drawn uniformly in the box [-10, 10]^2.
Points make_blobs(int64_t n_samples, int64_t centers, double cluster_std, uint32_t seed);
/// make_classification(n_samples, n_features=2, n_informative=2,
/// n_redundant=0, n_clusters_per_class=1, flip_y, random_state=seed).
Points make_classification(int64_t n_samples, double flip_y, uint32_t seed);

/// Row indices of a split, in the order scikit-learn returns the rows.
struct SplitIndices {
  std::vector<int64_t> train;
  std::vector<int64_t> test;
};
/// train_test_split(test_size, random_state=seed) of n rows: ShuffleSplit's
/// permutation, the first ceil(test_size * n) rows for testing. Throws
/// std::invalid_argument when a side would be empty.
SplitIndices train_test_split(int64_t n, double test_size, uint32_t seed);
/// The same with stratify=labels (StratifiedShuffleSplit): every class keeps
/// its share on both sides. Throws std::invalid_argument when a class has
/// one member or a side is smaller than the number of classes.
SplitIndices stratified_split(const std::vector<std::string>& labels, double test_size, uint32_t seed);

/// Class labels as scikit-learn encodes them: the sorted distinct labels and
/// each sample's index into them.
struct EncodedLabels {
  std::vector<std::string> classes;
  torch::Tensor index;  ///< int64 [N]
};
EncodedLabels encode_labels(const std::vector<std::string>& labels);

/// What a classifier returns for the query rows.
struct Prediction {
  torch::Tensor classes;        ///< int64 [M]: index into the sorted classes
  torch::Tensor probabilities;  ///< float64 [M, C] (undefined for SVM)
};

/// KNeighborsClassifier by brute force: distances to every training row,
/// the k nearest vote (uniform, or by inverse distance with exact matches
/// taking all the weight); ties go to the first class in sorted order.
struct KnnOptions {
  int64_t n_neighbors = 5;
  bool distance_weights = false;
  std::string metric = "minkowski";  ///< minkowski (p=2), euclidean, manhattan, chebyshev, cosine
};
Prediction knn_predict(const torch::Tensor& x_train, const torch::Tensor& y_train, int64_t num_classes,
                       const torch::Tensor& x_query, const KnnOptions& options);

/// LogisticRegression: binary (sigmoid, one coefficient row) for two
/// classes, multinomial softmax for more; minimises the summed log loss
/// times C plus half the squared weights (intercepts unpenalised), as
/// scikit-learn does, with L-BFGS (strong Wolfe line search) for l2 and
/// none, and proximal gradient descent for l1.
struct LogisticOptions {
  double C = 1.0;
  int64_t max_iter = 200;
  std::string penalty = "l2";  ///< l2, l1, none
};
struct LogisticModel {
  torch::Tensor coef;       ///< float64 [1, F] (two classes) or [C, F]
  torch::Tensor intercept;  ///< float64 [1] or [C]
  int64_t num_classes = 0;
  Prediction predict(const torch::Tensor& x) const;
};
LogisticModel fit_logistic(const torch::Tensor& x, const torch::Tensor& y, int64_t num_classes,
                           const LogisticOptions& options);

/// DecisionTreeClassifier (CART): best split over every feature at each
/// node, thresholds halfway between neighbouring distinct values (float32
/// features, as scikit-learn's tree stores them), grown until pure, two
/// samples or max_depth. Features are tried in column order, so among
/// equally good splits the first column wins (scikit-learn tries them in a
/// random order of its own generator).
struct TreeOptions {
  int64_t max_depth = 0;           ///< 0 = no limit
  std::string criterion = "gini";  ///< gini, entropy, log_loss
};
struct TreeNode {
  int64_t feature = -1;  ///< -1 for a leaf
  double threshold = 0.0;
  int64_t left = -1, right = -1;
  std::vector<double> counts;  ///< samples of each class that reached the node
};
struct DecisionTree {
  std::vector<TreeNode> nodes;  ///< nodes[0] is the root
  int64_t num_features = 0;
  torch::Tensor feature_importances;                    ///< float64 [F], summing to 1 (all zero for a single leaf)
  torch::Tensor predict(const torch::Tensor& x) const;  ///< int64 class index per row
  /// scikit-learn's export_text(): `|--- feature_0 <= 0.50` lines, leaves as `class: <label>`.
  std::string to_text(const std::vector<std::string>& classes) const;
};
DecisionTree fit_tree(const torch::Tensor& x, const torch::Tensor& y, int64_t num_classes, const TreeOptions& options);

/// MLPClassifier: hidden layers with the activation, a logistic output for
/// two classes and softmax for more, Glorot-uniform initialisation, Adam on
/// minibatches of min(200, N) reshuffled each epoch, L2 alpha 1e-4; stops
/// after max_iter epochs or when the loss has not improved by 1e-4 for ten.
struct MlpOptions {
  std::vector<int64_t> hidden_sizes{100};
  std::string activation = "relu";  ///< relu, tanh, logistic, identity
  int64_t max_iter = 200;
  double learning_rate_init = 1e-3;
  uint64_t seed = 0;
};
struct MlpResult {
  Prediction prediction;
  double train_loss = 0.0;  ///< the last epoch's mean loss, penalty included
  int64_t epochs = 0;
};
MlpResult fit_predict_mlp(const torch::Tensor& x_train, const torch::Tensor& y_train, int64_t num_classes,
                          const torch::Tensor& x_query, const MlpOptions& options);

/// SVC through LIBSVM (C-SVC, one-vs-one): kernel linear, rbf, poly
/// (degree 3, coef0 0) or sigmoid; gamma "scale" = 1 / (F * var(X)),
/// "auto" = 1 / F, or a number; tolerance 1e-3, shrinking on.
struct SvmOptions {
  double C = 1.0;
  std::string kernel = "rbf";
  std::string gamma = "scale";
};
struct SvmResult {
  torch::Tensor predictions;      ///< int64 class index per query row
  torch::Tensor support_vectors;  ///< float32 [n_sv, F], grouped by class, training order within
};
/// Throws std::invalid_argument for a bad gamma and std::runtime_error when LIBSVM refuses the problem.
SvmResult fit_predict_svm(const torch::Tensor& x_train, const torch::Tensor& y_train, const torch::Tensor& x_query,
                          const SvmOptions& options);

}  // namespace codefy::train::classic
