#include "train/classic.h"

#include "util/parse.h"

#include <torch/torch.h>

#include <libsvm/svm.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>

namespace codefy::train::classic {

// ---------------------------------------------------------------------------
// numpy's legacy generator

double NumpyRandom::random_sample() {
  const uint32_t a = next_uint32() >> 5;
  const uint32_t b = next_uint32() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyRandom::gauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * random_sample() - 1.0;
    x2 = 2.0 * random_sample() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

uint64_t NumpyRandom::interval(uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  for (int shift : {1, 2, 4, 8, 16, 32}) mask |= mask >> shift;
  uint64_t value;
  if (max <= 0xffffffffULL) {
    while ((value = (next_uint32() & mask)) > max) {
    }
  } else {
    auto next64 = [this] { return (static_cast<uint64_t>(next_uint32()) << 32) | next_uint32(); };
    while ((value = (next64() & mask)) > max) {
    }
  }
  return value;
}

std::vector<int64_t> NumpyRandom::permutation(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  shuffle(v);
  return v;
}

// ---------------------------------------------------------------------------
// Data generators

namespace {

/// numpy.linspace(start, stop, n, endpoint): i * step + start, the last point exactly `stop`.
std::vector<double> linspace(double start, double stop, int64_t n, bool endpoint) {
  std::vector<double> v(static_cast<size_t>(n));
  if (n == 0) return v;
  const int64_t div = endpoint ? n - 1 : n;
  if (div == 0) {
    v[0] = start;
    return v;
  }
  const double step = (stop - start) / static_cast<double>(div);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i) * step + start;
  if (endpoint && n > 1) v[n - 1] = stop;
  return v;
}

/// Rows of (x, y) shuffled as sklearn.utils.shuffle does, then Gaussian noise
/// added in row-major order (numpy's normal(scale=noise, size=X.shape)).
Points shuffle_and_noise(std::vector<double> xs, std::vector<int64_t> y, NumpyRandom& rng, double noise,
                         bool add_noise) {
  const int64_t n = static_cast<int64_t>(y.size());
  std::vector<int64_t> order = rng.permutation(n);
  Points p;
  p.x = torch::empty({n, 2}, torch::kFloat64);
  double* x = p.x.data_ptr<double>();
  p.y.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    x[2 * i] = xs[2 * order[i]];
    x[2 * i + 1] = xs[2 * order[i] + 1];
    p.y[i] = y[order[i]];
  }
  if (add_noise)
    for (int64_t i = 0; i < 2 * n; ++i) x[i] += rng.normal(0.0, noise);
  return p;
}

}  // namespace

Points make_moons(int64_t n_samples, double noise, uint32_t seed) {
  NumpyRandom rng(seed);
  const int64_t n_out = n_samples / 2, n_in = n_samples - n_out;
  const auto out = linspace(0.0, M_PI, n_out, true), in = linspace(0.0, M_PI, n_in, true);
  std::vector<double> xs;
  std::vector<int64_t> y;
  for (double t : out) xs.insert(xs.end(), {std::cos(t), std::sin(t)}), y.push_back(0);
  for (double t : in) xs.insert(xs.end(), {1.0 - std::cos(t), 1.0 - std::sin(t) - 0.5}), y.push_back(1);
  return shuffle_and_noise(std::move(xs), std::move(y), rng, noise, true);
}

Points make_circles(int64_t n_samples, double noise, double factor, uint32_t seed) {
  NumpyRandom rng(seed);
  const int64_t n_out = n_samples / 2, n_in = n_samples - n_out;
  const auto out = linspace(0.0, 2 * M_PI, n_out, false), in = linspace(0.0, 2 * M_PI, n_in, false);
  std::vector<double> xs;
  std::vector<int64_t> y;
  for (double t : out) xs.insert(xs.end(), {std::cos(t), std::sin(t)}), y.push_back(0);
  for (double t : in) xs.insert(xs.end(), {std::cos(t) * factor, std::sin(t) * factor}), y.push_back(1);
  return shuffle_and_noise(std::move(xs), std::move(y), rng, noise, true);
}

Points make_blobs(int64_t n_samples, int64_t centers, double cluster_std, uint32_t seed) {
  NumpyRandom rng(seed);
  std::vector<double> c(static_cast<size_t>(2 * centers));
  for (double& v : c) v = rng.uniform(-10.0, 10.0);
  std::vector<double> xs;
  std::vector<int64_t> y;
  for (int64_t k = 0; k < centers; ++k) {
    const int64_t n = n_samples / centers + (k < n_samples % centers ? 1 : 0);
    for (int64_t i = 0; i < n; ++i) {
      xs.push_back(rng.normal(c[2 * k], cluster_std));
      xs.push_back(rng.normal(c[2 * k + 1], cluster_std));
      y.push_back(k);
    }
  }
  return shuffle_and_noise(std::move(xs), std::move(y), rng, 0.0, false);
}

Points make_classification(int64_t n_samples, double flip_y, uint32_t seed) {
  NumpyRandom rng(seed);
  // Two clusters (one per class) of half the samples each, the remainder to the first.
  std::vector<int64_t> per_cluster(2, static_cast<int64_t>(static_cast<double>(n_samples) * 0.5));
  for (int64_t i = 0; i < n_samples - per_cluster[0] - per_cluster[1]; ++i) per_cluster[i % 2] += 1;
  // Centroids: two distinct vertices of the square {-1, 1}^2 (sample_without_replacement(4, 2)).
  const std::vector<int64_t> vertices = rng.permutation(4);
  double centroid[2][2];
  for (int k = 0; k < 2; ++k) {
    centroid[k][0] = ((vertices[k] >> 1) & 1) * 2.0 - 1.0;
    centroid[k][1] = (vertices[k] & 1) * 2.0 - 1.0;
  }
  std::vector<double> xs(static_cast<size_t>(2 * n_samples));
  for (double& v : xs) v = rng.gauss();
  std::vector<int64_t> y(static_cast<size_t>(n_samples));
  int64_t start = 0;
  for (int k = 0; k < 2; ++k) {
    double a[2][2];
    for (auto& row : a)
      for (double& v : row) v = 2.0 * rng.random_sample() - 1.0;
    for (int64_t i = start; i < start + per_cluster[k]; ++i) {
      const double u = xs[2 * i], v = xs[2 * i + 1];
      xs[2 * i] = u * a[0][0] + v * a[1][0] + centroid[k][0];  // X_k @ A + centroid
      xs[2 * i + 1] = u * a[0][1] + v * a[1][1] + centroid[k][1];
      y[i] = k;
    }
    start += per_cluster[k];
  }
  std::vector<bool> flip(static_cast<size_t>(n_samples));
  for (int64_t i = 0; i < n_samples; ++i) flip[i] = rng.random_sample() < flip_y;
  for (int64_t i = 0; i < n_samples; ++i)
    if (flip[i]) y[i] = static_cast<int64_t>(rng.interval(1));  // randint(2): masked draws
  Points p = shuffle_and_noise(std::move(xs), std::move(y), rng, 0.0, false);
  // Features permuted too.
  std::vector<int64_t> cols = {0, 1};
  rng.shuffle(cols);
  if (cols[0] == 1) p.x = p.x.flip(1).contiguous();
  return p;
}

// ---------------------------------------------------------------------------
// Splits

namespace {

/// ceil(test_size * n) test rows and the rest for training, as scikit-learn counts them.
std::pair<int64_t, int64_t> split_sizes(int64_t n, double test_size) {
  if (!(test_size > 0.0 && test_size < 1.0))
    throw std::invalid_argument("test_size must be in (0, 1), got " + std::to_string(test_size));
  const auto n_test = static_cast<int64_t>(std::ceil(test_size * static_cast<double>(n)));
  const int64_t n_train = n - n_test;
  if (n_train <= 0 || n_test <= 0)
    throw std::invalid_argument("with " + std::to_string(n) + " samples and test_size " + std::to_string(test_size) +
                                " the " + (n_train <= 0 ? "training" : "test") + " set would be empty");
  return {n_train, n_test};
}

/// scikit-learn's _approximate_mode: the per-class draws closest to the
/// class shares, leftover draws given to the largest remainders at random.
std::vector<int64_t> approximate_mode(const std::vector<int64_t>& counts, int64_t n_draws, NumpyRandom& rng) {
  const double total = static_cast<double>(std::accumulate(counts.begin(), counts.end(), int64_t{0}));
  std::vector<double> continuous(counts.size()), floored(counts.size());
  double floored_sum = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    continuous[i] = static_cast<double>(counts[i]) / total * static_cast<double>(n_draws);
    floored[i] = std::floor(continuous[i]);
    floored_sum += floored[i];
  }
  auto need = static_cast<int64_t>(static_cast<double>(n_draws) - floored_sum);
  if (need > 0) {
    std::vector<double> remainder(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) remainder[i] = continuous[i] - floored[i];
    std::vector<double> values = remainder;
    std::sort(values.begin(), values.end(), std::greater<>());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (double value : values) {
      std::vector<int64_t> inds;
      for (size_t i = 0; i < remainder.size(); ++i)
        if (remainder[i] == value) inds.push_back(static_cast<int64_t>(i));
      const int64_t add_now = std::min<int64_t>(static_cast<int64_t>(inds.size()), need);
      const std::vector<int64_t> perm = rng.permutation(static_cast<int64_t>(inds.size()));  // choice(replace=False)
      for (int64_t j = 0; j < add_now; ++j) floored[inds[perm[j]]] += 1;
      need -= add_now;
      if (need == 0) break;
    }
  }
  std::vector<int64_t> out(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) out[i] = static_cast<int64_t>(floored[i]);
  return out;
}

}  // namespace

SplitIndices train_test_split(int64_t n, double test_size, uint32_t seed) {
  const auto [n_train, n_test] = split_sizes(n, test_size);
  NumpyRandom rng(seed);
  const std::vector<int64_t> perm = rng.permutation(n);
  SplitIndices s;
  s.test.assign(perm.begin(), perm.begin() + n_test);
  s.train.assign(perm.begin() + n_test, perm.begin() + n_test + n_train);
  return s;
}

SplitIndices stratified_split(const std::vector<std::string>& labels, double test_size, uint32_t seed) {
  const auto n = static_cast<int64_t>(labels.size());
  const auto [n_train, n_test] = split_sizes(n, test_size);
  const EncodedLabels enc = encode_labels(labels);
  const auto num_classes = static_cast<int64_t>(enc.classes.size());
  const int64_t* y = enc.index.data_ptr<int64_t>();
  std::vector<int64_t> counts(static_cast<size_t>(num_classes), 0);
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(num_classes));
  for (int64_t i = 0; i < n; ++i) {
    ++counts[y[i]];
    members[y[i]].push_back(i);  // a stable sort by class: rows in order within a class
  }
  for (int64_t c = 0; c < num_classes; ++c)
    if (counts[c] < 2)
      throw std::invalid_argument("class \"" + enc.classes[c] + "\" has only 1 member; stratify needs at least 2");
  if (n_train < num_classes || n_test < num_classes)
    throw std::invalid_argument("the " + std::string(n_train < num_classes ? "training" : "test") + " set would have " +
                                std::to_string(std::min(n_train, n_test)) + " samples, fewer than the " +
                                std::to_string(num_classes) + " classes");
  NumpyRandom rng(seed);
  const std::vector<int64_t> n_i = approximate_mode(counts, n_train, rng);
  std::vector<int64_t> remaining(counts.size());
  for (size_t c = 0; c < counts.size(); ++c) remaining[c] = counts[c] - n_i[c];
  const std::vector<int64_t> t_i = approximate_mode(remaining, n_test, rng);
  SplitIndices s;
  for (int64_t c = 0; c < num_classes; ++c) {
    const std::vector<int64_t> perm = rng.permutation(counts[c]);
    for (int64_t j = 0; j < n_i[c]; ++j) s.train.push_back(members[c][perm[j]]);
    for (int64_t j = n_i[c]; j < n_i[c] + t_i[c]; ++j) s.test.push_back(members[c][perm[j]]);
  }
  rng.shuffle(s.train);
  rng.shuffle(s.test);
  return s;
}

EncodedLabels encode_labels(const std::vector<std::string>& labels) {
  EncodedLabels e;
  e.classes = labels;
  std::sort(e.classes.begin(), e.classes.end());
  e.classes.erase(std::unique(e.classes.begin(), e.classes.end()), e.classes.end());
  e.index = torch::empty({static_cast<int64_t>(labels.size())}, torch::kInt64);
  int64_t* p = e.index.data_ptr<int64_t>();
  for (size_t i = 0; i < labels.size(); ++i)
    p[i] = std::lower_bound(e.classes.begin(), e.classes.end(), labels[i]) - e.classes.begin();
  return e;
}

// ---------------------------------------------------------------------------
// k-nearest neighbours

Prediction knn_predict(const torch::Tensor& x_train, const torch::Tensor& y_train, int64_t num_classes,
                       const torch::Tensor& x_query, const KnnOptions& options) {
  const torch::Tensor train = x_train.to(torch::kFloat64), query = x_query.to(torch::kFloat64);
  const torch::Tensor labels = y_train.to(torch::kInt64);
  auto unit = [](const torch::Tensor& t) {
    const torch::Tensor norm = t.norm(2, 1, true);
    return t / torch::where(norm == 0, torch::ones_like(norm), norm);
  };
  const bool cosine = options.metric == "cosine";
  const torch::Tensor train_unit = cosine ? unit(train) : torch::Tensor();
  double p = 2.0;
  if (options.metric == "manhattan") p = 1.0;
  if (options.metric == "chebyshev") p = std::numeric_limits<double>::infinity();
  const int64_t k = std::min<int64_t>(options.n_neighbors, train.size(0));
  const int64_t m = query.size(0);
  torch::Tensor proba = torch::zeros({m, num_classes}, torch::kFloat64);
  // Queries in chunks, so the distance matrix stays near 2^24 entries however large the data.
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 24) / std::max<int64_t>(1, train.size(0)));
  for (int64_t start = 0; start < m; start += chunk) {
    const torch::Tensor a = query.narrow(0, start, std::min(chunk, m - start));
    // Exact differences, not the |a|^2 + |b|^2 - 2ab shortcut, so near ties order as they truly are.
    const torch::Tensor dist = cosine ? 1.0 - unit(a).matmul(train_unit.t()) : torch::cdist(a, train, p, 2);
    // A stable sort keeps, among equal distances, the training row that comes first.
    const auto sorted = dist.sort(/*stable=*/true, 1, false);
    const torch::Tensor nd = std::get<0>(sorted).narrow(1, 0, k), ni = std::get<1>(sorted).narrow(1, 0, k);
    torch::Tensor weights = torch::ones_like(nd);
    if (options.distance_weights) {
      // 1 / d; a query that coincides with training rows takes only their votes.
      const torch::Tensor exact = (nd == 0).any(1, true);
      weights = torch::where(exact, (nd == 0).to(torch::kFloat64), 1.0 / nd);
    }
    const torch::Tensor votes = labels.index_select(0, ni.reshape(-1)).reshape(ni.sizes());
    proba.narrow(0, start, a.size(0)).scatter_add_(1, votes, weights);
  }
  proba = proba / proba.sum(1, true);
  return {proba.argmax(1), proba};
}

// ---------------------------------------------------------------------------
// Logistic regression

Prediction LogisticModel::predict(const torch::Tensor& x) const {
  const torch::Tensor z = x.to(torch::kFloat64).matmul(coef.t()) + intercept;
  if (num_classes == 2) {
    const torch::Tensor p1 = torch::sigmoid(z.squeeze(1));
    return {(z.squeeze(1) > 0).to(torch::kInt64), torch::stack({1 - p1, p1}, 1)};
  }
  return {z.argmax(1), torch::softmax(z, 1)};
}

LogisticModel fit_logistic(const torch::Tensor& x_in, const torch::Tensor& y, int64_t num_classes,
                           const LogisticOptions& options) {
  const torch::Tensor x = x_in.to(torch::kFloat64);
  const int64_t n = x.size(0), f = x.size(1);
  const int64_t rows = num_classes == 2 ? 1 : num_classes;
  torch::Tensor w = torch::zeros({rows, f}, torch::kFloat64).requires_grad_(true);
  torch::Tensor b = torch::zeros({rows}, torch::kFloat64).requires_grad_(true);
  const torch::Tensor yf = y.to(torch::kFloat64);
  // Mean log loss: scikit-learn's objective divided by C * n, the same minimiser.
  auto data_loss = [&] {
    const torch::Tensor z = x.matmul(w.t()) + b;
    if (num_classes == 2) return torch::binary_cross_entropy_with_logits(z.squeeze(1), yf);
    return torch::nn::functional::cross_entropy(z, y);
  };
  const double reg = options.penalty == "none" ? 0.0 : 1.0 / (options.C * static_cast<double>(n));
  if (options.penalty != "l1") {
    torch::optim::LBFGS opt({w, b}, torch::optim::LBFGSOptions(1.0)
                                        .max_iter(options.max_iter)
                                        .max_eval(options.max_iter * 5 / 4 + 1)
                                        .tolerance_grad(1e-10)
                                        .tolerance_change(1e-12)
                                        .history_size(10)
                                        .line_search_fn("strong_wolfe"));
    auto closure = [&] {
      opt.zero_grad();
      torch::Tensor loss = data_loss() + 0.5 * reg * w.pow(2).sum();
      loss.backward();
      return loss;
    };
    opt.step(closure);
  } else {
    // Proximal gradient (ISTA) with backtracking: a gradient step on the
    // smooth loss, then soft-thresholding of the weights by step * reg.
    double step = 1.0;
    for (int64_t it = 0; it < options.max_iter; ++it) {
      w.mutable_grad() = torch::Tensor();
      b.mutable_grad() = torch::Tensor();
      torch::Tensor loss = data_loss();
      loss.backward();
      const double l0 = loss.item<double>();
      const torch::Tensor gw = w.grad().clone(), gb = b.grad().clone();
      torch::NoGradGuard no_grad;
      const torch::Tensor w0 = w.detach().clone(), b0 = b.detach().clone();
      while (true) {
        const torch::Tensor wz = w0 - step * gw;
        const torch::Tensor wn = wz.sign() * (wz.abs() - step * reg).clamp_min(0);
        const torch::Tensor bn = b0 - step * gb;
        w.copy_(wn);
        b.copy_(bn);
        const double l1 = data_loss().item<double>();
        const torch::Tensor dw = wn - w0, db = bn - b0;
        const double bound = l0 + (gw * dw).sum().item<double>() + (gb * db).sum().item<double>() +
                             ((dw.pow(2).sum() + db.pow(2).sum()) / (2 * step)).item<double>();
        if (l1 <= bound + 1e-15 || step < 1e-12) break;
        step *= 0.5;
      }
    }
  }
  LogisticModel m;
  m.coef = w.detach();
  m.intercept = b.detach();
  m.num_classes = num_classes;
  return m;
}

// ---------------------------------------------------------------------------
// Decision tree

namespace {

double impurity(const std::vector<double>& counts, double n, bool gini) {
  double v = gini ? 1.0 : 0.0;
  for (double c : counts) {
    if (c <= 0) continue;
    const double p = c / n;
    v += gini ? -p * p : -p * std::log2(p);
  }
  return v;
}

constexpr double kFeatureThreshold = 1e-7;  // scikit-learn's: closer values are not split apart

class TreeBuilder {
 public:
  TreeBuilder(const torch::Tensor& x, const torch::Tensor& y, int64_t num_classes, const TreeOptions& o)
      : x_(x.to(torch::kFloat32).contiguous()),
        y_(y.to(torch::kInt64).contiguous()),
        n_(x.size(0)),
        f_(x.size(1)),
        c_(num_classes),
        max_depth_(o.max_depth),
        gini_(o.criterion == "gini") {
    importances_.assign(static_cast<size_t>(f_), 0.0);
  }

  DecisionTree build() {
    std::vector<int64_t> rows(static_cast<size_t>(n_));
    std::iota(rows.begin(), rows.end(), 0);
    grow(rows, 0);
    DecisionTree t;
    t.nodes = std::move(nodes_);
    t.num_features = f_;
    double total = std::accumulate(importances_.begin(), importances_.end(), 0.0);
    t.feature_importances = torch::tensor(importances_, torch::kFloat64);
    if (total > 0) t.feature_importances /= total;
    return t;
  }

 private:
  float value(int64_t row, int64_t feature) const { return x_.data_ptr<float>()[row * f_ + feature]; }

  int64_t grow(std::vector<int64_t>& rows, int64_t depth) {
    const int64_t id = static_cast<int64_t>(nodes_.size());
    nodes_.emplace_back();
    std::vector<double> counts(static_cast<size_t>(c_), 0.0);
    for (int64_t r : rows) counts[y_.data_ptr<int64_t>()[r]] += 1;
    const double n = static_cast<double>(rows.size());
    const double imp = impurity(counts, n, gini_);
    nodes_[id].counts = counts;
    if ((max_depth_ > 0 && depth >= max_depth_) || rows.size() < 2 || imp <= 1e-7) return id;

    // Best split: the one with the largest proxy improvement (scikit-learn's
    // criterion proxies: for gini the sums of squared counts over sizes).
    double best = -std::numeric_limits<double>::infinity();
    int64_t best_feature = -1;
    double best_threshold = 0;
    const int64_t* y = y_.data_ptr<int64_t>();
    std::vector<int64_t> order = rows;
    for (int64_t feat = 0; feat < f_; ++feat) {
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return value(a, feat) < value(b, feat); });
      if (value(order.back(), feat) <= value(order.front(), feat) + kFeatureThreshold) continue;
      std::vector<double> left(static_cast<size_t>(c_), 0.0);
      for (size_t p = 0; p + 1 < order.size(); ++p) {
        left[y[order[p]]] += 1;
        const float here = value(order[p], feat), next = value(order[p + 1], feat);
        if (next <= here + kFeatureThreshold) continue;
        const double nl = static_cast<double>(p + 1), nr = n - nl;
        double proxy;
        if (gini_) {
          double sl = 0, sr = 0;
          for (int64_t k = 0; k < c_; ++k) {
            sl += left[k] * left[k];
            sr += (counts[k] - left[k]) * (counts[k] - left[k]);
          }
          proxy = sl / nl + sr / nr;
        } else {
          std::vector<double> right(static_cast<size_t>(c_));
          for (int64_t k = 0; k < c_; ++k) right[k] = counts[k] - left[k];
          proxy = -nl * impurity(left, nl, false) - nr * impurity(right, nr, false);
        }
        if (proxy > best) {
          best = proxy;
          best_feature = feat;
          double t = static_cast<double>(here) / 2.0 + static_cast<double>(next) / 2.0;
          if (t == static_cast<double>(next) || std::isinf(t)) t = here;
          best_threshold = t;
        }
      }
    }
    if (best_feature < 0) return id;
    std::vector<int64_t> l, r;
    for (int64_t row : rows) (value(row, best_feature) <= best_threshold ? l : r).push_back(row);
    std::vector<double> cl(static_cast<size_t>(c_), 0.0), cr(static_cast<size_t>(c_), 0.0);
    for (int64_t row : l) cl[y[row]] += 1;
    for (int64_t row : r) cr[y[row]] += 1;
    const double nl = static_cast<double>(l.size()), nr = static_cast<double>(r.size());
    importances_[best_feature] += n * imp - nl * impurity(cl, nl, gini_) - nr * impurity(cr, nr, gini_);
    nodes_[id].feature = best_feature;
    nodes_[id].threshold = best_threshold;
    const int64_t left_id = grow(l, depth + 1);
    const int64_t right_id = grow(r, depth + 1);
    nodes_[id].left = left_id;
    nodes_[id].right = right_id;
    return id;
  }

  torch::Tensor x_, y_;
  int64_t n_, f_, c_, max_depth_;
  bool gini_;
  std::vector<TreeNode> nodes_;
  std::vector<double> importances_;
};

int64_t argmax_first(const std::vector<double>& v) {
  return std::max_element(v.begin(), v.end()) - v.begin();  // the first of equal maxima
}

}  // namespace

DecisionTree fit_tree(const torch::Tensor& x, const torch::Tensor& y, int64_t num_classes, const TreeOptions& options) {
  return TreeBuilder(x, y, num_classes, options).build();
}

torch::Tensor DecisionTree::predict(const torch::Tensor& x_in) const {
  const torch::Tensor x = x_in.to(torch::kFloat32).contiguous();
  const int64_t m = x.size(0), f = x.size(1);
  torch::Tensor out = torch::empty({m}, torch::kInt64);
  const float* px = x.data_ptr<float>();
  for (int64_t i = 0; i < m; ++i) {
    int64_t node = 0;
    while (nodes[node].feature >= 0)
      node = px[i * f + nodes[node].feature] <= nodes[node].threshold ? nodes[node].left : nodes[node].right;
    out[i] = argmax_first(nodes[node].counts);
  }
  return out;
}

std::string DecisionTree::to_text(const std::vector<std::string>& classes) const {
  constexpr int64_t kMaxDepth = 10;  // export_text's default: deeper branches are summarised
  std::function<int64_t(int64_t)> subtree_depth = [&](int64_t node) -> int64_t {
    if (nodes[node].feature < 0) return 1;
    return 1 + std::max(subtree_depth(nodes[node].left), subtree_depth(nodes[node].right));
  };
  std::string out;
  std::function<void(int64_t, int64_t)> visit = [&](int64_t node, int64_t depth) {
    std::string indent;
    for (int64_t d = 0; d < depth; ++d) indent += "|   ";
    indent = indent.substr(0, indent.size() - 3) + "---";
    const TreeNode& t = nodes[node];
    const std::string leaf = indent + " class: " + classes[argmax_first(t.counts)] + "\n";
    if (depth > kMaxDepth + 1) {
      const int64_t sub = subtree_depth(node);
      out += sub == 1 ? leaf : indent + " truncated branch of depth " + std::to_string(sub) + "\n";
      return;
    }
    if (t.feature < 0) {
      out += leaf;
      return;
    }
    char threshold[64];
    std::snprintf(threshold, sizeof threshold, "%.2f", t.threshold);
    const std::string name = "feature_" + std::to_string(t.feature);
    out += indent + " " + name + " <= " + threshold + "\n";
    visit(t.left, depth + 1);
    out += indent + " " + name + " >  " + threshold + "\n";
    visit(t.right, depth + 1);
  };
  visit(0, 1);
  return out;
}

// ---------------------------------------------------------------------------
// Multi-layer perceptron

MlpResult fit_predict_mlp(const torch::Tensor& x_train, const torch::Tensor& y_train, int64_t num_classes,
                          const torch::Tensor& x_query, const MlpOptions& options) {
  auto gen = at::detail::createCPUGenerator(options.seed);
  const torch::Tensor x = x_train.to(torch::kFloat32).contiguous();
  const int64_t n = x.size(0);
  std::vector<int64_t> sizes{x.size(1)};
  sizes.insert(sizes.end(), options.hidden_sizes.begin(), options.hidden_sizes.end());
  sizes.push_back(num_classes == 2 ? 1 : num_classes);
  std::vector<torch::Tensor> weights, biases;
  const double factor = options.activation == "logistic" ? 2.0 : 6.0;
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    const double bound = std::sqrt(factor / static_cast<double>(sizes[l] + sizes[l + 1]));
    weights.push_back((torch::rand({sizes[l], sizes[l + 1]}, gen, torch::kFloat32) * 2 - 1).mul_(bound));
    biases.push_back((torch::rand({sizes[l + 1]}, gen, torch::kFloat32) * 2 - 1).mul_(bound));
    weights.back().requires_grad_(true);
    biases.back().requires_grad_(true);
  }
  auto act = [&](const torch::Tensor& t) {
    if (options.activation == "relu") return torch::relu(t);
    if (options.activation == "tanh") return torch::tanh(t);
    if (options.activation == "logistic") return torch::sigmoid(t);
    return t;
  };
  auto forward = [&](const torch::Tensor& in) {
    torch::Tensor h = in;
    for (size_t l = 0; l < weights.size(); ++l) {
      h = h.matmul(weights[l]) + biases[l];
      if (l + 1 < weights.size()) h = act(h);
    }
    return h;  // logits
  };
  std::vector<torch::Tensor> params = weights;
  params.insert(params.end(), biases.begin(), biases.end());
  torch::optim::Adam adam(params, torch::optim::AdamOptions(options.learning_rate_init).betas({0.9, 0.999}).eps(1e-8));
  constexpr double kAlpha = 1e-4, kTol = 1e-4;
  constexpr int64_t kNoChange = 10;
  const int64_t batch = std::min<int64_t>(200, n);
  double best_loss = std::numeric_limits<double>::infinity(), loss_epoch = 0;
  int64_t no_improvement = 0, epoch = 0;
  for (epoch = 0; epoch < options.max_iter;) {
    const torch::Tensor order = torch::randperm(n, gen, torch::kInt64);
    double total = 0;
    for (int64_t s = 0; s < n; s += batch) {
      const int64_t len = std::min(batch, n - s);
      const torch::Tensor idx = order.narrow(0, s, len);
      const torch::Tensor out = forward(x.index_select(0, idx));
      const torch::Tensor yb = y_train.index_select(0, idx);
      torch::Tensor loss = num_classes == 2
                               ? torch::binary_cross_entropy_with_logits(out.squeeze(1), yb.to(torch::kFloat32))
                               : torch::nn::functional::cross_entropy(out, yb);
      torch::Tensor penalty = torch::zeros({}, torch::kFloat32);
      for (const auto& w : weights) penalty = penalty + w.pow(2).sum();
      loss = loss + 0.5 * kAlpha * penalty / static_cast<double>(len);
      adam.zero_grad();
      loss.backward();
      adam.step();
      total += loss.item<double>() * static_cast<double>(len);
    }
    ++epoch;
    loss_epoch = total / static_cast<double>(n);
    // scikit-learn's convergence test: no improvement by tol for n_iter_no_change epochs.
    no_improvement = loss_epoch > best_loss - kTol ? no_improvement + 1 : 0;
    best_loss = std::min(best_loss, loss_epoch);
    if (no_improvement > kNoChange) break;
  }
  torch::NoGradGuard no_grad;
  const torch::Tensor logits = forward(x_query.to(torch::kFloat32)).to(torch::kFloat64);
  MlpResult r;
  if (num_classes == 2) {
    const torch::Tensor p1 = torch::sigmoid(logits.squeeze(1));
    r.prediction = {(p1 > 0.5).to(torch::kInt64), torch::stack({1 - p1, p1}, 1)};
  } else {
    r.prediction = {logits.argmax(1), torch::softmax(logits, 1)};
  }
  r.train_loss = loss_epoch;
  r.epochs = epoch;
  return r;
}

// ---------------------------------------------------------------------------
// Support vector classification (LIBSVM)

namespace {
void quiet(const char*) {}
}  // namespace

SvmResult fit_predict_svm(const torch::Tensor& x_train, const torch::Tensor& y_train, const torch::Tensor& x_query,
                          const SvmOptions& options) {
  const torch::Tensor x = x_train.to(torch::kFloat64).contiguous();
  const int64_t n = x.size(0), f = x.size(1);
  svm_parameter param{};
  param.svm_type = C_SVC;
  static const std::map<std::string, int> kKernels = {
      {"linear", LINEAR}, {"rbf", RBF}, {"poly", POLY}, {"sigmoid", SIGMOID}};
  const auto kernel = kKernels.find(options.kernel);
  if (kernel == kKernels.end()) throw std::invalid_argument("unknown kernel \"" + options.kernel + "\"");
  param.kernel_type = kernel->second;
  param.degree = 3;
  param.coef0 = 0.0;
  if (options.gamma == "scale") {
    const double var = x.var(/*unbiased=*/false).item<double>();
    param.gamma = var != 0 ? 1.0 / (static_cast<double>(f) * var) : 1.0;
  } else if (options.gamma == "auto") {
    param.gamma = 1.0 / static_cast<double>(f);
  } else {
    const auto gamma = util::parse_double(options.gamma);
    param.gamma = gamma.value_or(0.0);
    if (!(param.gamma > 0))
      throw std::invalid_argument("gamma must be \"scale\", \"auto\" or a positive number, got \"" + options.gamma +
                                  "\"");
  }
  param.C = options.C;
  param.eps = 1e-3;
  param.cache_size = 200;
  param.shrinking = 1;
  param.probability = 0;

  // Rows grouped by class (stable), the order in which scikit-learn's LIBSVM
  // groups them, so the solver sees the same problem.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const torch::Tensor y_index = y_train.to(torch::kInt64).contiguous();
  const int64_t* y = y_index.data_ptr<int64_t>();
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return y[a] < y[b]; });
  std::vector<std::vector<svm_node>> rows(static_cast<size_t>(n));
  std::vector<svm_node*> row_ptrs(static_cast<size_t>(n));
  std::vector<double> labels(static_cast<size_t>(n));
  const double* px = x.data_ptr<double>();
  auto to_nodes = [f](const double* v) {
    std::vector<svm_node> r;
    for (int64_t j = 0; j < f; ++j) r.push_back({static_cast<int>(j + 1), v[j]});
    r.push_back({-1, 0.0});
    return r;
  };
  for (int64_t i = 0; i < n; ++i) {
    rows[i] = to_nodes(px + order[i] * f);
    row_ptrs[i] = rows[i].data();
    labels[i] = static_cast<double>(y[order[i]]);
  }
  svm_problem prob{};
  prob.l = static_cast<int>(n);
  prob.y = labels.data();
  prob.x = row_ptrs.data();
  if (const char* err = svm_check_parameter(&prob, &param)) throw std::runtime_error(std::string("LIBSVM: ") + err);
  svm_set_print_string_function(&quiet);
  std::unique_ptr<svm_model, void (*)(svm_model*)> model(svm_train(&prob, &param),
                                                         [](svm_model* m) { svm_free_and_destroy_model(&m); });
  if (!model) throw std::runtime_error("LIBSVM could not train a model");

  const torch::Tensor q = x_query.to(torch::kFloat64).contiguous();
  SvmResult r;
  r.predictions = torch::empty({q.size(0)}, torch::kInt64);
  const double* pq = q.data_ptr<double>();
  for (int64_t i = 0; i < q.size(0); ++i) {
    const std::vector<svm_node> nodes = to_nodes(pq + i * f);
    r.predictions[i] = static_cast<int64_t>(std::lround(svm_predict(model.get(), nodes.data())));
  }
  // Support vectors by class in class order, training order within a class.
  const int nsv = svm_get_nr_sv(model.get());
  std::vector<int> sv(static_cast<size_t>(nsv));
  svm_get_sv_indices(model.get(), sv.data());
  std::vector<int64_t> original(sv.size());
  for (size_t i = 0; i < sv.size(); ++i) original[i] = order[sv[i] - 1];
  std::stable_sort(original.begin(), original.end(),
                   [&](int64_t a, int64_t b) { return y[a] != y[b] ? y[a] < y[b] : a < b; });
  r.support_vectors = x_train.to(torch::kFloat32).index_select(0, torch::tensor(original, torch::kInt64));
  return r;
}

}  // namespace codefy::train::classic
