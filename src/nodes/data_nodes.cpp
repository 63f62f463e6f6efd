// Data: Dataset (MNIST/FashionMNIST), CSVDataset, ToyDataset, DataLoader.
#include "nodes/library.h"
#include "train/augment.h"

#include <torch/torch.h>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <vector>

namespace codefy {

using graph::DataType;

namespace {

/// Keeps the first `max_samples` samples (0 keeps all): for quick lessons and tests.
train::Dataset take_first(train::Dataset d, int64_t max_samples) {
  if (max_samples > 0 && max_samples < d.size()) {
    d.inputs = d.inputs.narrow(0, 0, max_samples).clone();
    d.targets = d.targets.narrow(0, 0, max_samples).clone();
  }
  return d;
}

graph::ParamDef max_samples_param() {
  return def::advanced(def::integer("max_samples", 0, "Use only the first N samples (0 = all)", 0));
}

void register_dataset(NodeRegistry& r) {
  graph::NodeDef d{"Dataset",
                   "Data",
                   "Load a standard vision dataset (MNIST, FashionMNIST) from idx files on disk; never downloads.",
                   {def::in("train_transform", DataType::kTransform,
                            "Chain for the training split: where augmentation belongs (drawn per sample, epoch "
                            "and seed as batches are cut); ignored on the test split, with a warning",
                            true),
                    def::in("eval_transform", DataType::kTransform,
                            "Chain for the test split (and the training split when train_transform is unwired), "
                            "applied once as the data is read",
                            true)},
                   {def::out("dataset", DataType::kDataset, "Loaded dataset")},
                   {def::select("name", "MNIST", {"MNIST", "FashionMNIST"}, "Dataset"),
                    def::select("split", "train", {"train", "test"}, "Which split"),
                    def::text("data_dir", "./data",
                              "Folder holding <name>/raw/*-idx*-ubyte[.gz] (torchvision's layout); relative to the "
                              "graph file. Falls back to Debian's /usr/share/datasets when not found there."),
                    max_samples_param()}};
  // Cacheable: a dataset is read-only once loaded. The files the loader
  // would read now, with their sizes and times, are part of the key, so a
  // replaced file (in any folder the loader searches) is read again.
  auto fingerprint = [](const nlohmann::json& params, const std::filesystem::path& base_dir) {
    const std::string name = params.at("name").get<std::string>();
    const bool train = params.at("split").get<std::string>() == "train";
    const std::string dir = params.at("data_dir").get<std::string>();
    auto files = dir.empty() ? std::vector<std::filesystem::path>{}
                             : train::find_mnist_files(name, train, resolve_path(dir, base_dir));
    if (files.empty()) files = train::find_mnist_files(name, train, {});  // Debian's packaged copy
    if (files.empty()) throw std::runtime_error("not found");             // the run says where it looked
    std::string fp;
    for (const auto& f : files) fp += file_stamp(f) + ';';
    return fp;
  };
  r.add(
      std::move(d),
      [](NodeContext& ctx) {
        const std::string name = ctx.param_string("name");
        const bool train = ctx.param_string("split") == "train";
        // The chain for this split; with one, images start as ToTensor's
        // [0, 1] and the chain normalizes (CodefyUI's rule), else the
        // default (x - 0.5) / 0.5.
        const auto* train_chain = ctx.input_if<nlohmann::json>("train_transform");
        const auto* eval_chain = ctx.input_if<nlohmann::json>("eval_transform");
        if (!train && train_chain)
          ctx.warn(std::string("split is test: the chain wired into train_transform is not applied (augmentation "
                               "belongs on the training split)") +
                   (eval_chain ? "" : "; wire eval_transform to transform this split"));
        const std::string chain_port = train && train_chain ? "train_transform" : "eval_transform";
        const nlohmann::json* chain_json = train && train_chain ? train_chain : eval_chain;
        std::optional<train::Augmentation> chain;
        if (chain_json) {
          try {
            chain = train::Augmentation::from_json(*chain_json);
          } catch (const train::AugmentationError& e) {
            NodeContext::fail_input(chain_port, e.what());
          }
        }
        const bool normalize = !chain;
        const std::string dir = ctx.param_string("data_dir");
        // A folder the run may not read is refused, not replaced by the packaged copy.
        const std::filesystem::path folder = dir.empty() ? std::filesystem::path() : ctx.readable_path(dir, "data_dir");
        train::Dataset ds;
        try {
          ds = train::load_mnist(name, train, folder, normalize);
        } catch (const std::exception& first) {
          if (dir.empty()) NodeContext::fail_param("data_dir", first);
          NodeContext::rethrow_if_out_of_memory(first);  // the files were there: another folder will not fit either
          const std::string why = NodeContext::describe(first);
          try {
            ds = train::load_mnist(name, train, {}, normalize);  // Debian's packaged copy
          } catch (const std::exception& packaged) {
            NodeContext::rethrow_if_out_of_memory(packaged);
            NodeContext::fail_param("data_dir", why);
          }
          // The fallback is kept, but never silent: the run trains on other files than the graph names.
          std::error_code ec;
          const bool exists = std::filesystem::is_directory(folder, ec);
          ctx.warn("Dataset \"" + ctx.node().id + "\": data_dir \"" + dir + "\" (" + folder.string() + ") " +
                   (exists ? "has no readable " + name + " " + (train ? "train" : "test") + " files (" + why + ")"
                           : std::string("does not exist")) +
                   "; using " + name + " from " + ds.source + " instead");
        }
        ds = take_first(std::move(ds), ctx.param_int("max_samples"));
        if (chain) {
          try {
            if (chain->is_random()) {  // drawn as batches are cut; tried on one sample now
              chain->apply(ds.inputs[0], 0);
              ds.augment = std::make_shared<const train::Augmentation>(*chain);
            } else {
              ds.inputs = chain->apply_batch(ds.inputs, torch::arange(ds.size()), 0, 0);
            }
          } catch (const train::AugmentationError& e) {
            NodeContext::fail_input(chain_port, e.what());
          }
        }
        return ValueMap{{"dataset", std::make_shared<const train::Dataset>(std::move(ds))}};
      },
      fingerprint);
}

void register_csv_dataset(NodeRegistry& r) {
  graph::NodeDef d{"CSVDataset",
                   "Data",
                   "Load a CSV file (header row) into a dataset: numeric feature columns and one target column.",
                   {},
                   {def::out("dataset", DataType::kDataset, "Loaded dataset")},
                   {def::required(def::text("path", "", "CSV file, relative to the graph file")),
                    def::text("target_column", "", "Target column (empty = last column)"),
                    def::text("include_columns", "", "Comma-separated feature columns (empty = all others)"),
                    def::select("task", "classification", {"classification", "regression"},
                                "Class labels (int64) or numeric targets (float32)"),
                    max_samples_param()}};
  r.add(
      std::move(d),
      [](NodeContext& ctx) {
        train::CsvOptions o;
        o.target_column = ctx.param_string("target_column");
        const std::string cols = ctx.param_string("include_columns");
        size_t start = 0;
        while (start < cols.size()) {
          size_t end = cols.find(',', start);
          if (end == std::string::npos) end = cols.size();
          std::string c = cols.substr(start, end - start);
          c.erase(0, c.find_first_not_of(" \t"));
          c.erase(c.find_last_not_of(" \t") + 1);
          if (!c.empty()) o.feature_columns.push_back(c);
          start = end + 1;
        }
        o.classification = ctx.param_string("task") == "classification";
        const auto path = ctx.param_path("path");
        train::Dataset ds;
        try {
          ds = train::load_csv(path, o);
        } catch (const std::exception& e) {
          NodeContext::fail_param("path", e);
        }
        return ValueMap{{"dataset", std::make_shared<const train::Dataset>(
                                        take_first(std::move(ds), ctx.param_int("max_samples")))}};
      },
      def::files_fingerprint({"path"}));
}

void register_toy_dataset(NodeRegistry& r) {
  r.add({"ToyDataset",
         "Data",
         "Generate a small dataset: Gaussian blobs (classification) or a noisy linear target (regression).",
         {},
         {def::out("dataset", DataType::kDataset, "Generated dataset")},
         {def::select("task", "classification", {"classification", "regression"}, "Kind of data"),
          def::integer("n_samples", 1000, "Number of samples", 1, 10000000),
          def::integer("n_features", 2, "Features per sample", 1, 100000),
          def::integer("n_classes", 2, "Classes (classification)", 2, 100000),
          def::number("noise", 0.5, "Noise standard deviation", 0.0),
          def::integer("seed", 0, "Generator seed: same seed, same data", 0)}},
        [](NodeContext& ctx) {
          train::SyntheticOptions o;
          o.task = ctx.param_string("task");
          o.num_samples = ctx.param_int("n_samples");
          o.num_features = ctx.param_int("n_features");
          o.num_classes = ctx.param_int("n_classes");
          o.noise = ctx.param_float("noise");
          o.seed = static_cast<uint64_t>(ctx.param_int("seed"));
          return ValueMap{{"dataset", std::make_shared<const train::Dataset>(train::make_synthetic(o))}};
        });
}

void register_data_loader(NodeRegistry& r) {
  graph::NodeDef d{
      "DataLoader",
      "Data",
      "Split a dataset into batches; the shuffle order follows (seed, epoch), so runs repeat exactly.",
      {def::in("dataset", DataType::kDataset, "Dataset to batch")},
      {def::out("dataloader", DataType::kDataLoader, "Batches for training")},
      {def::integer("batch_size", 32, "Samples per batch", 1),
       def::boolean("shuffle", true, "Shuffle data at every epoch"),
       def::integer("num_workers", 0,
                    "Threads preparing batches ahead of training (augmentation); 0: on the training "
                    "thread. The batches are the same either way",
                    0, 16),
       def::boolean("pin_memory", false,
                    "Stage batches in page-locked memory for faster GPU transfer (no effect on CPU)"),
       def::advanced(def::boolean("drop_last", false, "Drop the last, short batch")),
       def::advanced(def::boolean("persistent_workers", false,
                                  "Keep the workers between epochs. Requires num_workers > 0 (Codefy's "
                                  "workers are threads, started in microseconds: kept or not, the same)")),
       def::advanced(def::integer("prefetch_factor", 2,
                                  "Batches each worker prepares ahead. Ignored when num_workers is 0", 1, 64)),
       def::advanced(def::integer("seed", -1, "Shuffle seed (-1 = derived from the run seed)", -1))}};
  d.cacheable = false;
  d.memory_hints.batch_param = "batch_size";
  r.add(std::move(d), [](NodeContext& ctx) {
    train::DataLoaderOptions o;
    o.batch_size = ctx.param_int("batch_size");
    o.shuffle = ctx.param_bool("shuffle");
    o.drop_last = ctx.param_bool("drop_last");
    o.num_workers = ctx.param_int("num_workers");
    o.pin_memory = ctx.param_bool("pin_memory");
    o.prefetch_factor = ctx.param_int("prefetch_factor");
    if (ctx.param_bool("persistent_workers") && o.num_workers == 0)
      NodeContext::fail_param("persistent_workers",
                              "requires num_workers > 0; set num_workers or turn persistent_workers off");
    const int64_t seed = ctx.param_int("seed");
    o.seed = seed >= 0 ? static_cast<uint64_t>(seed) : ctx.seed();
    const auto& ds = ctx.input_as<train::DatasetPtr>("dataset");
    return ValueMap{{"dataloader", std::make_shared<const train::DataLoader>(ds, o)}};
  });
}

}  // namespace

void nodes::register_data_nodes(NodeRegistry& r) {
  register_dataset(r);
  register_csv_dataset(r);
  register_toy_dataset(r);
  register_data_loader(r);
}

}  // namespace codefy
