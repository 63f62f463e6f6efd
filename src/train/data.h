// Datasets and the data loader: in memory, reproducible order.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/types.h>  // torch::Tensor

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace codefy::train {

struct Augmentation;

/// An in-memory dataset: `inputs` [N, ...] (float32) and `targets` [N]
/// (int64 class labels) or [N, k] (float32 regression targets).
struct Dataset {
  std::string name;
  torch::Tensor inputs;
  torch::Tensor targets;
  /// Number of classes for classification, 0 for regression.
  int64_t num_classes = 0;
  /// Where it was read from (resolved path), empty for generated data.
  std::string source;
  /// Random augmentation every DataLoader applies to this dataset's batches,
  /// sample by sample (null: none).
  std::shared_ptr<const Augmentation> augment;
  int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};
using DatasetPtr = std::shared_ptr<const Dataset>;

/// Reads an idx file (MNIST format), plain or gzip-compressed, as uint8
/// [N, rows, cols] for images or [N] for labels. Throws std::runtime_error
/// naming the path on a missing, truncated or foreign file.
torch::Tensor read_idx_file(const std::filesystem::path& path);

/// Folders searched for `<prefix>-images-idx3-ubyte[.gz]` of dataset `name`
/// ("MNIST" or "FashionMNIST"): torchvision's `<data_dir>/<name>/raw/`, then
/// `<data_dir>/<name>/`, `<data_dir>/`; with an empty data_dir, Debian's
/// /usr/share/datasets location (fashion-mnist, mnist).
std::vector<std::filesystem::path> mnist_search_dirs(const std::string& name, const std::filesystem::path& data_dir);

/// Loads MNIST/FashionMNIST `train` or `test` split. Images float32
/// [N,1,28,28] transformed as CodefyUI does, (x/255 - 0.5) / 0.5 (with
/// `normalize` false: x/255, ToTensor's [0, 1], for a transform chain to
/// go on from); labels int64. The error for missing files lists every place it looked.
Dataset load_mnist(const std::string& name, bool train, const std::filesystem::path& data_dir, bool normalize = true);

/// The image and label files load_mnist(name, train, data_dir) reads, in
/// that order; empty when no folder it searches has both. An empty
/// `data_dir` means Debian's packaged copy.
std::vector<std::filesystem::path> find_mnist_files(const std::string& name, bool train,
                                                    const std::filesystem::path& data_dir);

/// Options for load_csv.
struct CsvOptions {
  std::string target_column;                 ///< name of the target column; empty = last column
  std::vector<std::string> feature_columns;  ///< empty = every other numeric column
  bool classification = true;                ///< int64 class targets (mapped from distinct values) or float regression
};
/// Reads a CSV file with a header row into a dataset.
Dataset load_csv(const std::filesystem::path& path, const CsvOptions& options);

/// A CSV file as text cells (RFC 4180, as load_csv reads it): the column
/// names and the data rows, each with one cell per column.
struct CsvTable {
  std::vector<std::string> header;  ///< the first row, or "0", "1", ... without a header row
  std::vector<std::vector<std::string>> rows;
};
/// A whole CSV field as a number, independent of the C locale; nullopt when it is not one.
std::optional<double> parse_number(const std::string& s);
/// Reads `path`; throws std::runtime_error naming the file on a missing,
/// empty or ragged one.
CsvTable read_csv_table(const std::filesystem::path& path, bool has_header);

/// Options for make_synthetic.
struct SyntheticOptions {
  std::string task = "classification";  ///< "classification" or "regression"
  int64_t num_samples = 1000;
  int64_t num_features = 2;
  int64_t num_classes = 2;  ///< classification only
  double noise = 0.1;
  uint64_t seed = 0;
};
/// A generated dataset: Gaussian blobs per class, or a noisy linear target.
/// The same options give the same tensors, bit for bit.
Dataset make_synthetic(const SyntheticOptions& options);

/// One mini-batch.
struct Batch {
  torch::Tensor inputs;
  torch::Tensor targets;
};

/// Options of a DataLoader.
struct DataLoaderOptions {
  int64_t batch_size = 32;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
  /// Data-parallel sharding, as PyTorch's DistributedSampler (drop_last
  /// false): every rank takes the same (seed, epoch) order, padded by
  /// repeating its start to a multiple of `num_replicas`, and rank r keeps
  /// positions r, r + num_replicas, ... One replica: the whole dataset.
  int64_t num_replicas = 1;
  int64_t rank = 0;
  /// Threads preparing batches ahead of training (0: on the training thread).
  /// The batches are the same either way.
  int64_t num_workers = 0;
  /// Batches each worker prepares ahead of the one training takes.
  int64_t prefetch_factor = 2;
  /// Cut batches into page-locked memory, so a CUDA device copies them
  /// asynchronously; where LibTorch has no CUDA it has no effect.
  bool pin_memory = false;
};

/// Whether pin_memory pins: LibTorch has CUDA and a device answers (read once).
bool pinning_available();

/// Cuts a dataset into mini-batches. The order of epoch e depends only on
/// (seed, e), so a resumed run sees the same batches as an uninterrupted one.
class DataLoader {
 public:
  DataLoader(DatasetPtr dataset, DataLoaderOptions options);
  const Dataset& dataset() const { return *dataset_; }
  const DatasetPtr& dataset_ptr() const { return dataset_; }
  const DataLoaderOptions& options() const { return options_; }
  /// Batches per epoch (the short last one counts unless drop_last).
  int64_t num_batches() const;
  /// Samples this loader's shard holds per epoch: the dataset's size, or
  /// ceil(size / num_replicas) with sharding.
  int64_t num_samples() const;
  /// Sample indices of epoch `epoch` (int64 [num_samples()]); identity when
  /// not shuffling; this rank's shard of it with sharding.
  torch::Tensor epoch_order(int64_t epoch) const;
  /// Batch `index` of an order returned by epoch_order(epoch); the
  /// dataset's augmentation, if any, drawn for (seed, epoch, sample index).
  Batch batch(const torch::Tensor& order, int64_t index, int64_t epoch = 0) const;

 private:
  DatasetPtr dataset_;
  DataLoaderOptions options_;
};
using DataLoaderPtr = std::shared_ptr<const DataLoader>;

}  // namespace codefy::train
