// Tests of datasets (idx/MNIST, CSV, synthetic) and the DataLoader.
#include "train/data.h"

#include "../common/test_util.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using codefy::testing::read_file;
using codefy::testing::TempDir;
using codefy::testing::write_file;
using namespace codefy::train;

namespace {

std::string idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string out;
  auto be32 = [&out](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
  };
  be32(magic);
  for (uint32_t d : dims) be32(d);
  out.append(data.begin(), data.end());
  return out;
}

void write_gzip(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

/// Expects `fn` to throw E with every string of `parts` in its message.
template <typename E, typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning " << parts.front();
  } catch (const E& e) {
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

/// A fake MNIST split of `n` 28x28 images into `dir` (pixel p of image i = (i*31 + p) % 256).
void write_fake_mnist(const fs::path& dir, const std::string& prefix, uint32_t n, bool gzip, uint32_t num_labels = 0) {
  std::vector<uint8_t> pixels(n * 28 * 28);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i / 784 * 31 + i % 784) % 256);
  if (num_labels == 0) num_labels = n;
  std::vector<uint8_t> labels(num_labels);
  for (uint32_t i = 0; i < num_labels; ++i) labels[i] = static_cast<uint8_t>(i % 10);
  const std::string images = idx_bytes(0x803, {n, 28, 28}, pixels);
  const std::string label_bytes = idx_bytes(0x801, {num_labels}, labels);
  const std::string suffix = gzip ? ".gz" : "";
  auto write = gzip ? write_gzip : write_file;
  write(dir / (prefix + "-images-idx3-ubyte" + suffix), images);
  write(dir / (prefix + "-labels-idx1-ubyte" + suffix), label_bytes);
}

}  // namespace

// --- idx ---------------------------------------------------------------------

TEST(IdxFile, RoundTripPlainAndGzip) {
  TempDir tmp;
  std::vector<uint8_t> pixels(3 * 2 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 10);
  const std::string images = idx_bytes(0x803, {3, 2, 4}, pixels);
  const std::string labels = idx_bytes(0x801, {3}, {7, 0, 255});
  write_file(tmp.path() / "images", images);
  write_gzip(tmp.path() / "images.gz", images);
  write_file(tmp.path() / "labels", labels);
  write_gzip(tmp.path() / "labels.gz", labels);

  torch::Tensor expected =
      torch::tensor(std::vector<int64_t>(pixels.begin(), pixels.end())).to(torch::kUInt8).view({3, 2, 4});
  for (const char* name : {"images", "images.gz"}) {
    torch::Tensor t = read_idx_file(tmp.path() / name);
    EXPECT_EQ(t.scalar_type(), torch::kUInt8);
    EXPECT_EQ(t.sizes(), (std::vector<int64_t>{3, 2, 4}));
    EXPECT_TRUE(torch::equal(t, expected)) << name;
  }
  for (const char* name : {"labels", "labels.gz"}) {
    torch::Tensor t = read_idx_file(tmp.path() / name);
    EXPECT_EQ(t.sizes(), (std::vector<int64_t>{3}));
    EXPECT_EQ(t[0].item<int64_t>(), 7);
    EXPECT_EQ(t[2].item<int64_t>(), 255);
  }
}

TEST(IdxFile, ErrorsNameThePath) {
  TempDir tmp;
  const std::string images = idx_bytes(0x803, {2, 3, 3}, std::vector<uint8_t>(18, 1));

  const fs::path missing = tmp.path() / "nope-idx3-ubyte";
  expect_error<std::runtime_error>([&] { read_idx_file(missing); }, {missing.string()});

  const fs::path truncated = tmp.path() / "truncated";
  write_file(truncated, images.substr(0, images.size() - 5));
  expect_error<std::runtime_error>([&] { read_idx_file(truncated); }, {"truncated", truncated.string()});

  const fs::path header_only = tmp.path() / "header_only";
  write_file(header_only, images.substr(0, 6));
  expect_error<std::runtime_error>([&] { read_idx_file(header_only); }, {"truncated", header_only.string()});

  // A gzip stream cut in the middle.
  const fs::path gz_full = tmp.path() / "full.gz";
  write_gzip(gz_full, idx_bytes(0x803, {50, 28, 28}, std::vector<uint8_t>(50 * 784, 3)));
  const std::string gz_bytes = read_file(gz_full);
  const fs::path gz_cut = tmp.path() / "cut.gz";
  write_file(gz_cut, gz_bytes.substr(0, gz_bytes.size() / 2));
  expect_error<std::runtime_error>([&] { read_idx_file(gz_cut); }, {gz_cut.string()});
  // Even when only the gzip trailer (CRC, length) is missing.
  const fs::path gz_no_trailer = tmp.path() / "no_trailer.gz";
  write_file(gz_no_trailer, gz_bytes.substr(0, gz_bytes.size() - 4));
  expect_error<std::runtime_error>([&] { read_idx_file(gz_no_trailer); }, {gz_no_trailer.string()});

  const fs::path foreign = tmp.path() / "foreign.png";
  write_file(foreign, "\x89PNG\r\n\x1a\n0000000000000000");
  expect_error<std::runtime_error>([&] { read_idx_file(foreign); }, {"not an idx file", foreign.string()});

  const fs::path float_idx = tmp.path() / "float.idx";
  write_file(float_idx, idx_bytes(0x00000D01, {1}, {0, 0, 0, 0}));
  expect_error<std::runtime_error>([&] { read_idx_file(float_idx); }, {"not an idx file", float_idx.string()});

  const fs::path trailing = tmp.path() / "trailing";
  write_file(trailing, images + "xx");
  expect_error<std::runtime_error>([&] { read_idx_file(trailing); }, {trailing.string()});
}

// --- MNIST ---------------------------------------------------------------------

TEST(Mnist, SearchDirs) {
  auto dirs = mnist_search_dirs("FashionMNIST", "data");
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], fs::path("data/FashionMNIST/raw"));
  EXPECT_EQ(dirs[1], fs::path("data/FashionMNIST"));
  EXPECT_EQ(dirs[2], fs::path("data"));
  EXPECT_EQ(mnist_search_dirs("FashionMNIST", ""), std::vector<fs::path>{"/usr/share/datasets/fashion-mnist"});
  EXPECT_EQ(mnist_search_dirs("MNIST", ""), std::vector<fs::path>{"/usr/share/datasets/mnist"});
  EXPECT_THROW(mnist_search_dirs("CIFAR10", "data"), std::invalid_argument);
}

TEST(Mnist, LoadsTorchvisionLayoutAndNormalises) {
  TempDir tmp;
  const fs::path raw = tmp.path() / "FashionMNIST" / "raw";
  write_fake_mnist(raw, "t10k", 4, /*gzip=*/false);
  write_fake_mnist(raw, "train", 6, /*gzip=*/true);
  // A decoy in a later search location: raw/ must win.
  write_fake_mnist(tmp.path(), "t10k", 2, /*gzip=*/false);

  Dataset test = load_mnist("FashionMNIST", /*train=*/false, tmp.path());
  EXPECT_EQ(test.name, "FashionMNIST");
  EXPECT_EQ(test.source, fs::canonical(raw).string());
  EXPECT_EQ(test.num_classes, 10);
  ASSERT_EQ(test.inputs.sizes(), (std::vector<int64_t>{4, 1, 28, 28}));
  EXPECT_EQ(test.inputs.scalar_type(), torch::kFloat32);
  ASSERT_EQ(test.targets.sizes(), (std::vector<int64_t>{4}));
  EXPECT_EQ(test.targets.scalar_type(), torch::kInt64);
  EXPECT_TRUE(torch::equal(test.targets, torch::tensor({0, 1, 2, 3}, torch::kInt64)));
  // Image 0: pixel p = p % 256, so pixel 0 is 0, pixel 255 is 255, pixel 51 is 51.
  torch::Tensor flat = test.inputs[0].flatten();
  EXPECT_EQ(flat[0].item<float>(), -1.0f);
  EXPECT_EQ(flat[255].item<float>(), 1.0f);
  EXPECT_NEAR(flat[51].item<float>(), 51.0f / 255.0f * 2.0f - 1.0f, 1e-6);
  EXPECT_GE(test.inputs.min().item<float>(), -1.0f);
  EXPECT_LE(test.inputs.max().item<float>(), 1.0f);

  Dataset train = load_mnist("FashionMNIST", /*train=*/true, tmp.path());
  EXPECT_EQ(train.size(), 6);
  // Image 1 starts at pixel value 31.
  EXPECT_NEAR(train.inputs[1][0][0][0].item<float>(), 31.0f / 255.0f * 2.0f - 1.0f, 1e-6);

  // The second location, <data_dir>/<name>/, with gzip files.
  TempDir other;
  write_fake_mnist(other.path() / "MNIST", "train", 3, /*gzip=*/true);
  Dataset mnist = load_mnist("MNIST", true, other.path());
  EXPECT_EQ(mnist.size(), 3);
  EXPECT_EQ(mnist.source, fs::canonical(other.path() / "MNIST").string());
}

TEST(Mnist, CountMismatchIsAnError) {
  TempDir tmp;
  write_fake_mnist(tmp.path(), "train", 3, false, /*num_labels=*/2);
  expect_error<std::runtime_error>([&] { load_mnist("MNIST", true, tmp.path()); }, {"3 images", "2 labels"});
}

TEST(Mnist, MissingFilesListEveryPlace) {
  TempDir tmp;
  // Images without labels: still not a usable location.
  const fs::path raw = tmp.path() / "FashionMNIST" / "raw";
  write_fake_mnist(raw, "train", 2, false);
  fs::remove(raw / "train-labels-idx1-ubyte");
  std::vector<std::string> expected = {"never downloads"};
  for (const fs::path& dir : mnist_search_dirs("FashionMNIST", tmp.path())) {
    for (const char* file : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}) {
      expected.push_back((dir / file).string());
      expected.push_back((dir / file).string() + ".gz");
    }
  }
  expected.push_back((raw / "train-images-idx3-ubyte").string() + " (found)\n");
  expected.push_back((raw / "train-labels-idx1-ubyte").string() + "\n");
  expect_error<std::runtime_error>([&] { load_mnist("FashionMNIST", true, tmp.path()); }, expected);
}

TEST(Mnist, RealFashionMnistTestSplit) {
  const fs::path debian = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(debian / "t10k-images-idx3-ubyte.gz") && !fs::exists(debian / "t10k-images-idx3-ubyte")) {
    FAIL() << "Debian's dataset-fashion-mnist is missing (scripts/setup.sh installs it)";
  }
  Dataset ds = load_mnist("FashionMNIST", /*train=*/false, "");
  EXPECT_EQ(ds.source, fs::canonical(debian).string());
  ASSERT_EQ(ds.inputs.sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  ASSERT_EQ(ds.targets.sizes(), (std::vector<int64_t>{10000}));
  EXPECT_EQ(ds.targets.min().item<int64_t>(), 0);
  EXPECT_EQ(ds.targets.max().item<int64_t>(), 9);
  // The test split is balanced: 1000 of each class.
  EXPECT_TRUE(torch::equal(torch::bincount(ds.targets), torch::full({10}, 1000, torch::kInt64)));
  EXPECT_EQ(ds.inputs.min().item<float>(), -1.0f);
  EXPECT_EQ(ds.inputs.max().item<float>(), 1.0f);
}

// --- CSV -------------------------------------------------------------------------

TEST(Csv, QuotedFieldsTextColumnsAndClassMapping) {
  TempDir tmp;
  const fs::path path = tmp.path() / "animals.csv";
  write_file(path,
             "name,\"weight, kg\",height,label\r\n"
             "\"Rex \"\"the dog\"\"\",30.5,\"60\",dog\r\n"
             "\"multi\nline\",4, 25 ,cat\r\n"
             "\r\n"
             "tom,-4.5e0,+23,\"cat\"\r\n");
  Dataset ds = load_csv(path, {});
  EXPECT_EQ(ds.name, "animals");
  EXPECT_EQ(ds.source, fs::canonical(path).string());
  EXPECT_EQ(ds.num_classes, 2);
  ASSERT_EQ(ds.inputs.sizes(), (std::vector<int64_t>{3, 2}));  // "name" is text: not a feature
  EXPECT_EQ(ds.inputs.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(ds.inputs, torch::tensor({{30.5f, 60.0f}, {4.0f, 25.0f}, {-4.5f, 23.0f}})));
  // Lexicographic order: cat → 0, dog → 1.
  EXPECT_TRUE(torch::equal(ds.targets, torch::tensor({1, 0, 0}, torch::kInt64)));
}

// Hardening (#13 item 7): CSVDataset pointed at /etc/shadow answered "available columns: root:*:20228:...".
TEST(Csv, ErrorsNeverQuoteMuchOfAFileThatIsNotACsv) {
  TempDir tmp;
  const fs::path shadow = tmp.path() / "shadow";
  write_file(shadow,
             "root:*:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\nsecret-user:$y$j9T$abcdefgh:20228::::::\n");
  CsvOptions options;
  options.target_column = "label";
  for (const CsvOptions& o : {CsvOptions{}, options}) {
    try {
      load_csv(shadow, o);
      FAIL() << "a one-column file was read as a table";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find("root:"), std::string::npos) << what;
      EXPECT_EQ(what.find("secret-user"), std::string::npos) << what;
      EXPECT_NE(what.find("not a CSV table"), std::string::npos) << what;
    }
  }
  // A real table's column names are listed, each cut short, at most 20 of them.
  std::string header, row;
  for (int i = 0; i < 30; ++i) {
    header += (i ? "," : "") + std::string("column_with_a_rather_long_name_number_") + std::to_string(i) + "_xxxxxxxx";
    row += (i ? ",1" : "1");
  }
  const fs::path wide = tmp.path() / "wide.csv";
  write_file(wide, header + "\n" + row + "\n");
  try {
    load_csv(wide, options);
    FAIL() << "an unknown target column was accepted";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("and 10 more"), std::string::npos) << what;
    EXPECT_EQ(what.find("_xxxxxxxx"), std::string::npos) << what;  // names cut at 40 characters
    EXPECT_LT(what.size(), 1500u) << what;
  }
}

TEST(Csv, NumericClassesSortNumerically) {
  TempDir tmp;
  const fs::path path = tmp.path() / "n.csv";
  write_file(path, "a,b,y\n1,2,10\n3,4,2\n5,6,2.0\n7,8,5\n");
  Dataset ds = load_csv(path, {});
  EXPECT_EQ(ds.num_classes, 3);
  EXPECT_TRUE(torch::equal(ds.targets, torch::tensor({2, 0, 0, 1}, torch::kInt64)));
}

TEST(Csv, RegressionAndChosenColumns) {
  TempDir tmp;
  const fs::path path = tmp.path() / "r.csv";
  write_file(path, "x1,target,x2,x3\n1,0.5,2,3\n4,-1.25,5,6\n");
  CsvOptions options;
  options.classification = false;
  options.target_column = "target";
  Dataset ds = load_csv(path, options);
  EXPECT_EQ(ds.num_classes, 0);
  EXPECT_TRUE(torch::equal(ds.inputs, torch::tensor({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}})));
  ASSERT_EQ(ds.targets.sizes(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ds.targets.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(ds.targets, torch::tensor({{0.5f}, {-1.25f}})));

  options.feature_columns = {"x3", "x1"};
  ds = load_csv(path, options);
  EXPECT_TRUE(torch::equal(ds.inputs, torch::tensor({{3.0f, 1.0f}, {6.0f, 4.0f}})));
}

TEST(Csv, Errors) {
  TempDir tmp;
  const fs::path missing = tmp.path() / "missing.csv";
  expect_error<std::runtime_error>([&] { load_csv(missing, {}); }, {missing.string()});

  const fs::path empty = tmp.path() / "empty.csv";
  write_file(empty, "\n\n");
  expect_error<std::runtime_error>([&] { load_csv(empty, {}); }, {"empty", empty.string()});

  const fs::path header_only = tmp.path() / "header.csv";
  write_file(header_only, "a,b\n");
  expect_error<std::runtime_error>([&] { load_csv(header_only, {}); }, {"no data rows", header_only.string()});

  const fs::path ok = tmp.path() / "ok.csv";
  write_file(ok, "alpha,beta,gamma\n1,2,3\n");
  CsvOptions bad_target;
  bad_target.target_column = "delta";
  expect_error<std::runtime_error>([&] { load_csv(ok, bad_target); }, {"delta", "alpha, beta, gamma"});
  CsvOptions bad_feature;
  bad_feature.feature_columns = {"alpha", "omega"};
  expect_error<std::runtime_error>([&] { load_csv(ok, bad_feature); }, {"omega", "alpha, beta, gamma"});

  const fs::path ragged = tmp.path() / "ragged.csv";
  write_file(ragged, "a,b,c\n1,2,3\n4,5,6\n7,8\n");
  expect_error<std::runtime_error>([&] { load_csv(ragged, {}); }, {"row 3", ragged.string()});

  // A mostly numeric feature column with one bad cell.
  const fs::path bad_cell = tmp.path() / "bad_cell.csv";
  write_file(bad_cell, "a,b,y\n1,2,0\n3,oops,1\n");
  expect_error<std::runtime_error>([&] { load_csv(bad_cell, {}); }, {"'b'", "row 2", "oops"});
  // An explicitly chosen text column.
  const fs::path text = tmp.path() / "text.csv";
  write_file(text, "name,x,y\nann,1,0\nbob,2,1\n");
  CsvOptions with_name;
  with_name.feature_columns = {"name", "x"};
  expect_error<std::runtime_error>([&] { load_csv(text, with_name); }, {"'name'", "row 1"});
  // Regression needs a numeric target.
  CsvOptions regression;
  regression.classification = false;
  regression.target_column = "name";
  expect_error<std::runtime_error>([&] { load_csv(text, regression); }, {"'name'", "row 1"});

  const fs::path unterminated = tmp.path() / "quote.csv";
  write_file(unterminated, "a,b\n1,\"2\n");
  expect_error<std::runtime_error>([&] { load_csv(unterminated, {}); }, {"unterminated", unterminated.string()});
}

// --- synthetic -----------------------------------------------------------------------

TEST(Synthetic, DeterministicAndShaped) {
  SyntheticOptions options;
  options.num_samples = 300;
  options.num_features = 5;
  options.num_classes = 3;
  options.seed = 42;
  // The global RNG must be left alone.
  torch::manual_seed(7);
  const torch::Tensor before = torch::rand({4});
  torch::manual_seed(7);
  Dataset a = make_synthetic(options);
  EXPECT_TRUE(torch::equal(torch::rand({4}), before));
  Dataset b = make_synthetic(options);
  EXPECT_TRUE(torch::equal(a.inputs, b.inputs));
  EXPECT_TRUE(torch::equal(a.targets, b.targets));
  ASSERT_EQ(a.inputs.sizes(), (std::vector<int64_t>{300, 5}));
  EXPECT_EQ(a.inputs.scalar_type(), torch::kFloat32);
  EXPECT_EQ(a.targets.scalar_type(), torch::kInt64);
  EXPECT_EQ(a.num_classes, 3);
  EXPECT_TRUE(a.source.empty());
  EXPECT_TRUE(torch::equal(torch::bincount(a.targets), torch::full({3}, 100, torch::kInt64)));

  options.seed = 43;
  EXPECT_FALSE(torch::equal(make_synthetic(options).inputs, a.inputs));

  SyntheticOptions reg;
  reg.task = "regression";
  reg.num_samples = 50;
  reg.num_features = 3;
  reg.seed = 1;
  Dataset r1 = make_synthetic(reg);
  Dataset r2 = make_synthetic(reg);
  ASSERT_EQ(r1.targets.sizes(), (std::vector<int64_t>{50, 1}));
  EXPECT_EQ(r1.targets.scalar_type(), torch::kFloat32);
  EXPECT_EQ(r1.num_classes, 0);
  EXPECT_TRUE(torch::equal(r1.inputs, r2.inputs));
  EXPECT_TRUE(torch::equal(r1.targets, r2.targets));
  reg.seed = 2;
  EXPECT_FALSE(torch::equal(make_synthetic(reg).targets, r1.targets));
}

TEST(Synthetic, ClassesAreSeparableAndRegressionIsLinear) {
  // Moderate noise: a nearest-centroid rule already gets almost everything
  // right, so an MLP can reach high accuracy.
  for (int64_t features : {1, 2, 8}) {
    SyntheticOptions options;
    options.num_samples = 2000;
    options.num_features = features;
    options.num_classes = 5;
    options.noise = 0.5;
    Dataset ds = make_synthetic(options);
    std::vector<torch::Tensor> means;
    for (int64_t k = 0; k < 5; ++k) means.push_back(ds.inputs.index({ds.targets == k}).mean(0));
    torch::Tensor centroids = torch::stack(means);
    torch::Tensor predicted = torch::cdist(ds.inputs, centroids).argmin(1);
    double accuracy = predicted.eq(ds.targets).to(torch::kDouble).mean().item<double>();
    EXPECT_GT(accuracy, 0.95) << features << " features";
  }

  // Regression without noise is exactly linear: least squares recovers it.
  SyntheticOptions reg;
  reg.task = "regression";
  reg.num_samples = 200;
  reg.num_features = 4;
  reg.noise = 0.0;
  Dataset ds = make_synthetic(reg);
  torch::Tensor x = torch::cat({ds.inputs, torch::ones({200, 1})}, 1).to(torch::kDouble);
  torch::Tensor coef = std::get<0>(torch::linalg_lstsq(x, ds.targets.to(torch::kDouble)));
  torch::Tensor residual = x.matmul(coef) - ds.targets.to(torch::kDouble);
  EXPECT_LT(residual.abs().max().item<double>(), 1e-4);
}

TEST(Synthetic, RejectsBadOptions) {
  SyntheticOptions bad_task;
  bad_task.task = "clustering";
  EXPECT_THROW(make_synthetic(bad_task), std::invalid_argument);
  SyntheticOptions one_class;
  one_class.num_classes = 1;
  EXPECT_THROW(make_synthetic(one_class), std::invalid_argument);
  SyntheticOptions no_samples;
  no_samples.num_samples = 0;
  EXPECT_THROW(make_synthetic(no_samples), std::invalid_argument);
  SyntheticOptions negative_noise;
  negative_noise.noise = -1;
  EXPECT_THROW(make_synthetic(negative_noise), std::invalid_argument);
}

// --- DataLoader ---------------------------------------------------------------------

namespace {
/// Dataset whose target i is i, so batches show which samples they hold.
DatasetPtr indexed_dataset(int64_t n) {
  auto ds = std::make_shared<Dataset>();
  ds->name = "indexed";
  ds->inputs = torch::arange(n, torch::kFloat32).unsqueeze(1).repeat({1, 2});
  ds->targets = torch::arange(n, torch::kInt64);
  ds->num_classes = n;
  return ds;
}
}  // namespace

TEST(DataLoader, BatchCountsAndShortLastBatch) {
  DataLoader loader(indexed_dataset(10), {3, false, 0, false});
  EXPECT_EQ(loader.num_batches(), 4);
  torch::Tensor order = loader.epoch_order(0);
  EXPECT_TRUE(torch::equal(order, torch::arange(10, torch::kInt64)));
  Batch last = loader.batch(order, 3);
  EXPECT_EQ(last.inputs.sizes(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(last.targets[0].item<int64_t>(), 9);
  Batch first = loader.batch(order, 0);
  EXPECT_TRUE(torch::equal(first.targets, torch::tensor({0, 1, 2}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(first.inputs.select(1, 0), torch::tensor({0.0f, 1.0f, 2.0f})));
  EXPECT_THROW(loader.batch(order, 4), std::out_of_range);

  DataLoader dropping(indexed_dataset(10), {3, true, 0, true});
  EXPECT_EQ(dropping.num_batches(), 3);
  DataLoader exact(indexed_dataset(9), {3, true, 0, true});
  EXPECT_EQ(exact.num_batches(), 3);
  DataLoader tiny(indexed_dataset(2), {3, true, 0, true});
  EXPECT_EQ(tiny.num_batches(), 0);
  DataLoader tiny_keep(indexed_dataset(2), {3, true, 0, false});
  EXPECT_EQ(tiny_keep.num_batches(), 1);

  auto make = [](DatasetPtr ds, int64_t batch_size) { DataLoader l(std::move(ds), {batch_size, true, 0, false}); };
  EXPECT_THROW(make(indexed_dataset(10), 0), std::invalid_argument);
  EXPECT_THROW(make(indexed_dataset(10), -2), std::invalid_argument);
  EXPECT_THROW(make(nullptr, 4), std::invalid_argument);
}

TEST(DataLoader, EverySampleOncePerEpoch) {
  DataLoader loader(indexed_dataset(103), {8, true, 5, false});
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    torch::Tensor order = loader.epoch_order(epoch);
    std::vector<torch::Tensor> seen;
    for (int64_t i = 0; i < loader.num_batches(); ++i) {
      Batch b = loader.batch(order, i);
      EXPECT_TRUE(torch::equal(b.inputs.select(1, 1).to(torch::kInt64), b.targets));
      seen.push_back(b.targets);
    }
    torch::Tensor all = torch::cat(seen);
    EXPECT_TRUE(torch::equal(std::get<0>(all.sort()), torch::arange(103, torch::kInt64)));
    EXPECT_FALSE(torch::equal(all, torch::arange(103, torch::kInt64)));  // actually shuffled
  }
  // With drop_last the kept samples are distinct too.
  DataLoader dropping(indexed_dataset(103), {8, true, 5, true});
  torch::Tensor order = dropping.epoch_order(0);
  std::set<int64_t> kept;
  for (int64_t i = 0; i < dropping.num_batches(); ++i) {
    Batch b = dropping.batch(order, i);
    EXPECT_EQ(b.targets.size(0), 8);
    for (int64_t j = 0; j < 8; ++j) kept.insert(b.targets[j].item<int64_t>());
  }
  EXPECT_EQ(kept.size(), 96u);
}

TEST(DataLoader, OrderDependsOnlyOnSeedAndEpoch) {
  auto ds = indexed_dataset(1000);
  DataLoader a(ds, {32, true, 11, false});
  DataLoader b(ds, {32, true, 11, false});
  DataLoader other_seed(ds, {32, true, 12, false});

  torch::manual_seed(1);
  torch::Tensor e0 = a.epoch_order(0);
  torch::manual_seed(999);  // the global RNG plays no part
  EXPECT_TRUE(torch::equal(b.epoch_order(0), e0));
  EXPECT_FALSE(torch::equal(a.epoch_order(1), e0));
  EXPECT_FALSE(torch::equal(other_seed.epoch_order(0), e0));

  // Resume: epoch 3 computed alone equals epoch 3 after epochs 0..2.
  for (int64_t epoch = 0; epoch < 3; ++epoch) a.epoch_order(epoch);
  torch::Tensor after = a.epoch_order(3);
  DataLoader resumed(ds, {32, true, 11, false});
  EXPECT_TRUE(torch::equal(resumed.epoch_order(3), after));
  EXPECT_THROW(a.epoch_order(-1), std::invalid_argument);
}
