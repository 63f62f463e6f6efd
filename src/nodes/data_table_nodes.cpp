// Tabular data, as CodefyUI's Data nodes give it: CSVReader, ColumnSelector,
// Normalize, TrainTestSplit, SyntheticDataset. Features are [N, F] tensors,
// labels and column names are lists of strings.
#include "nodes/library.h"
#include "nodes/table_values.h"
#include "train/classic.h"
#include "train/data.h"

#include <torch/torch.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>

namespace codefy {

using graph::DataType;

// ---------------------------------------------------------------------------
// Shared readers (table_values.h)

namespace nodes {

std::string shape_text(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

torch::Tensor read_matrix(const NodeContext& ctx, const std::string& port) {
  const auto& t = ctx.input_as<torch::Tensor>(port);
  if (t.dim() != 2)
    NodeContext::fail_input(port, "expected a 2-D tensor [samples, features], got shape " + shape_text(t));
  return t.detach().to(torch::kCPU).to(torch::kFloat32).contiguous();
}

std::string python_number(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.dump();
  const double d = v.get<double>();
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, d).ptr;
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::vector<std::string> read_labels(const NodeContext& ctx, const std::string& port) {
  const Value& v = ctx.input(port);
  std::vector<std::string> out;
  if (const auto* t = std::get_if<torch::Tensor>(&v)) {
    if (t->dim() != 1)
      NodeContext::fail_input(port, "expected a list or a 1-D tensor of labels, got shape " + shape_text(*t));
    const torch::Tensor c = t->detach().to(torch::kCPU);
    const bool integral = !c.is_floating_point();
    const torch::Tensor d = c.to(torch::kFloat64).contiguous();
    for (int64_t i = 0; i < d.numel(); ++i) {
      const double x = d.data_ptr<double>()[i];
      out.push_back(integral ? std::to_string(static_cast<int64_t>(x)) : python_number(x));
    }
    return out;
  }
  const auto* j = std::get_if<nlohmann::json>(&v);
  if (!j || !j->is_array())
    NodeContext::fail_input(port, std::string("expected a list of labels, got ") + value_kind(v));
  for (const auto& x : *j) {
    if (x.is_string())
      out.push_back(x.get<std::string>());
    else if (x.is_boolean())
      out.push_back(x.get<bool>() ? "True" : "False");
    else if (x.is_number())
      out.push_back(python_number(x));
    else
      NodeContext::fail_input(port, "a label must be a string or a number, got " + x.dump());
  }
  return out;
}

void check_rows(const torch::Tensor& features, const std::string& features_port, size_t labels,
                const std::string& labels_port) {
  if (features.size(0) != static_cast<int64_t>(labels))
    NodeContext::fail_input(labels_port, "has " + std::to_string(labels) + " labels but " + features_port + " has " +
                                             std::to_string(features.size(0)) + " rows (shape " + shape_text(features) +
                                             ")");
}

nlohmann::json to_list(const std::vector<std::string>& items) { return nlohmann::json(items); }

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string s = text.substr(start, end - start);
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    if (!s.empty()) out.push_back(s);
    start = end + 1;
  }
  return out;
}

}  // namespace nodes

namespace {

using nodes::read_labels;
using nodes::read_matrix;
using nodes::shape_text;
using nodes::to_list;

std::string join_names(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

void register_csv_reader(NodeRegistry& r) {
  r.add(
      {"CSVReader",
       "Data",
       "Load a CSV into a feature tensor + label list. Numeric columns (filtered by `include_columns` if set) "
       "become a [N, F] float32 tensor; the column named in `target_column` becomes a list of string labels for "
       "downstream classifier nodes.",
       {},
       {def::out("tensor", DataType::kTensor, "Float32 [N, F] tensor of feature columns."),
        def::out("labels", DataType::kList,
                 "String labels from `target_column` (empty list when no target column set)."),
        def::out("columns", DataType::kList, "Names of the feature columns in tensor order.")},
       {def::text("path", "data/samples/iris.csv", "Path to the CSV file (absolute or relative to the graph file)."),
        def::text("target_column", "", "Optional name of the label column. Leave blank for unsupervised loading."),
        def::text("include_columns", "",
                  "Optional comma-separated list of feature columns to keep. Empty means 'all numeric columns "
                  "except the target'."),
        def::boolean("skip_header", true,
                     "True when the first row is a header. False generates 0-indexed column names.")}},
      [](NodeContext& ctx) {
        if (ctx.param_string("path").empty()) NodeContext::fail_param("path", "must not be empty");
        train::CsvTable table;
        try {
          table = train::read_csv_table(ctx.param_path("path"), ctx.param_bool("skip_header"));
        } catch (const std::exception& e) {
          NodeContext::fail_param("path", e);
        }
        const auto& header = table.header;
        auto column = [&](const std::string& name, const std::string& param) -> size_t {
          const auto it = std::find(header.begin(), header.end(), name);
          if (it == header.end())
            NodeContext::fail_param(param,
                                    "column \"" + name + "\" is not in the file; available: " + join_names(header));
          return static_cast<size_t>(it - header.begin());
        };
        const std::string target = ctx.param_string("target_column");
        const size_t target_index = target.empty() ? header.size() : column(target, "target_column");
        // A numeric column: every non-empty cell is a number (an empty cell reads as NaN, as in pandas).
        auto numeric = [&](size_t c) {
          for (const auto& row : table.rows)
            if (!row[c].empty() && !train::parse_number(row[c])) return false;
          return true;
        };
        std::vector<size_t> features;
        const auto include = nodes::split_commas(ctx.param_string("include_columns"));
        if (!include.empty()) {
          for (const auto& name : include) features.push_back(column(name, "include_columns"));
        } else {
          for (size_t c = 0; c < header.size(); ++c)
            if (c != target_index && (table.rows.empty() || numeric(c))) features.push_back(c);
        }
        const auto n = static_cast<int64_t>(table.rows.size());
        torch::Tensor x = torch::empty({n, static_cast<int64_t>(features.size())}, torch::kFloat32);
        float* px = x.data_ptr<float>();
        for (int64_t i = 0; i < n; ++i) {
          for (size_t f = 0; f < features.size(); ++f) {
            const std::string& cell = table.rows[i][features[f]];
            const auto v = cell.empty() ? std::optional<double>(std::numeric_limits<double>::quiet_NaN())
                                        : train::parse_number(cell);
            if (!v)
              NodeContext::fail_param("include_columns", "column \"" + header[features[f]] +
                                                             "\" has the non-number \"" + cell + "\" in data row " +
                                                             std::to_string(i + 1));
            *px++ = static_cast<float>(*v);
          }
        }
        std::vector<std::string> labels;
        if (!target.empty()) {
          // Numbers as Python writes a pandas column's values: an integer column's
          // cells as integers, a float column's as floats; text as it is.
          const bool is_numeric = numeric(target_index);
          bool integral = is_numeric;
          for (const auto& row : table.rows) {
            const auto v = train::parse_number(row[target_index]);
            integral =
                integral && v && std::floor(*v) == *v && row[target_index].find_first_of(".eE") == std::string::npos;
          }
          for (const auto& row : table.rows) {
            const std::string& cell = row[target_index];
            if (!is_numeric)
              labels.push_back(cell);
            else if (integral)
              labels.push_back(std::to_string(static_cast<int64_t>(*train::parse_number(cell))));
            else if (const auto v = train::parse_number(cell))
              labels.push_back(nodes::python_number(*v));
            else
              labels.push_back("nan");
          }
        }
        std::vector<std::string> names;
        names.reserve(features.size());
        for (size_t c : features) names.push_back(header[c]);
        return ValueMap{{"tensor", x}, {"labels", to_list(labels)}, {"columns", to_list(names)}};
      },
      def::files_fingerprint({"path"}));
}

void register_column_selector(NodeRegistry& r) {
  r.add({"ColumnSelector",
         "Data",
         "Pick columns from a 2D tensor, by index or name",
         {def::in("tensor", DataType::kTensor, "Input 2D tensor [rows, cols]."),
          def::in("columns", DataType::kList, "Optional list of column names — required when selecting by `names`.",
                  true)},
         {def::out("tensor", DataType::kTensor, "Tensor of shape [rows, len(selected_cols)].")},
         {def::text("indices", "0", "Comma-separated column indices, e.g. '0,2,3'. Used when `names` is empty."),
          def::text("names", "",
                    "Comma-separated column names. When set, takes precedence over `indices` and requires the "
                    "`columns` input to be connected.")}},
        [](NodeContext& ctx) {
          const auto& x = ctx.input_as<torch::Tensor>("tensor");
          const int64_t n_cols = x.dim() >= 1 ? x.size(-1) : 0;
          std::vector<int64_t> indices;
          const auto names = nodes::split_commas(ctx.param_string("names"));
          if (!names.empty()) {
            if (!ctx.has_input("columns"))
              NodeContext::fail_param("names",
                                      "is set but no `columns` input is connected; connect a list of column "
                                      "names or use `indices` instead");
            const std::vector<std::string> cols = read_labels(ctx, "columns");
            for (const auto& name : names) {
              const auto it = std::find(cols.begin(), cols.end(), name);
              if (it == cols.end())
                NodeContext::fail_param("names",
                                        "\"" + name + "\" is not in the columns input (" + join_names(cols) + ")");
              indices.push_back(it - cols.begin());
            }
            if (static_cast<int64_t>(cols.size()) != n_cols)
              NodeContext::fail_input("columns", "names " + std::to_string(cols.size()) +
                                                     " columns but the tensor has shape " + shape_text(x));
          } else {
            for (const auto& s : nodes::split_commas(ctx.param_string("indices"))) {
              int64_t i = 0;
              const auto res = std::from_chars(s.data(), s.data() + s.size(), i);
              if (res.ec != std::errc() || res.ptr != s.data() + s.size())
                NodeContext::fail_param("indices", "\"" + s + "\" is not a whole number");
              if (i < 0 || i >= n_cols)
                NodeContext::fail_param("indices", "contains out-of-range value " + std::to_string(i) +
                                                       " (the tensor of shape " + shape_text(x) + " has " +
                                                       std::to_string(n_cols) + " cols)");
              indices.push_back(i);
            }
          }
          const torch::Tensor out = indices.empty()
                                        ? x.narrow(-1, 0, 0)
                                        : x.index_select(-1, torch::tensor(indices, torch::kInt64).to(x.device()));
          return ValueMap{{"tensor", out}};
        });
}

/// A statistic (reduced with keepdim) as CodefyUI reports it: squeezed, then
/// a plain number or nested lists.
nlohmann::json tensor_json(const torch::Tensor& t_in) {
  const torch::Tensor t = t_in.squeeze().to(torch::kFloat64).contiguous();
  std::function<nlohmann::json(const torch::Tensor&)> build = [&](const torch::Tensor& s) -> nlohmann::json {
    if (s.dim() == 0) return s.item<double>();
    nlohmann::json a = nlohmann::json::array();
    for (int64_t i = 0; i < s.size(0); ++i) a.push_back(build(s[i]));
    return a;
  };
  return build(t);
}

void flatten_numbers(const nlohmann::json& j, std::vector<float>& out) {
  if (j.is_array()) {
    for (const auto& x : j) flatten_numbers(x, out);
  } else if (j.is_number()) {
    out.push_back(j.get<float>());
  } else {
    NodeContext::fail_input("stats", "statistics must be numbers, got " + j.dump());
  }
}

void register_normalize(NodeRegistry& r) {
  r.add({"Normalize",
         "Data",
         "Normalise a tensor along one axis; outputs the stats",
         {def::in("tensor", DataType::kTensor, "Input tensor; the normalisation runs along `axis`."),
          def::in("stats", DataType::kAny,
                  "Optional `stats` output of another Normalize (e.g. fitted on the training split). When wired, "
                  "those statistics are applied instead of fitting new ones.",
                  true)},
         {def::out("tensor", DataType::kTensor, "Normalised tensor, same shape as input."),
          def::out("stats", DataType::kAny,
                   "Dict of the statistics used (mean/std for zscore, min/max for minmax, norm for unit_norm); wire "
                   "it into another Normalize's `stats` input to reuse them.")},
         {def::select("mode", "zscore", {"zscore", "minmax", "unit_norm"}, "Normalisation recipe."),
          def::integer("axis", 0, "Axis along which to compute statistics. 0 = per-column, 1 = per-row.")}},
        [](NodeContext& ctx) {
          const torch::Tensor x = ctx.input_as<torch::Tensor>("tensor").to(torch::kFloat32);
          int64_t axis = ctx.param_int("axis");
          if (axis < -x.dim() || axis >= x.dim() || x.dim() == 0)
            NodeContext::fail_param(
                "axis", "axis=" + std::to_string(axis) + " is out of range for a tensor of shape " + shape_text(x));
          if (axis < 0) axis += x.dim();
          // A zero spread divides by 1, so constant columns come out as zeros, not NaN.
          auto safe = [](const torch::Tensor& d) { return torch::where(d == 0, torch::ones_like(d), d); };
          if (ctx.has_input("stats")) {
            // Apply statistics fitted elsewhere: restore the keepdim shape so they broadcast.
            const Value& sv = ctx.input("stats");
            const auto* stats = std::get_if<nlohmann::json>(&sv);
            if (!stats || !stats->is_object())
              NodeContext::fail_input(
                  "stats", std::string("must be the stats dict of another Normalize, got ") + value_kind(sv));
            std::vector<int64_t> shape = x.sizes().vec();
            shape[axis] = 1;
            int64_t expected = 1;
            for (int64_t d : shape) expected *= d;
            auto stat = [&](const std::string& key) {
              std::vector<float> values;
              flatten_numbers(stats->at(key), values);
              if (static_cast<int64_t>(values.size()) != expected)
                NodeContext::fail_input("stats", "stats[\"" + key + "\"] has " + std::to_string(values.size()) +
                                                     " value(s), but a tensor of shape " + shape_text(x) +
                                                     " along axis=" + std::to_string(axis) + " needs " +
                                                     std::to_string(expected) +
                                                     "; wire stats fitted on data with the same columns and axis");
              return torch::tensor(values, torch::kFloat32).reshape(shape).to(x.device());
            };
            torch::Tensor out;
            if (stats->contains("mean") && stats->contains("std")) {
              out = (x - stat("mean")) / safe(stat("std"));
            } else if (stats->contains("min") && stats->contains("max")) {
              const torch::Tensor mn = stat("min");
              out = (x - mn) / safe(stat("max") - mn);
            } else if (stats->contains("norm")) {
              out = x / safe(stat("norm"));
            } else {
              NodeContext::fail_input(
                  "stats", "has keys " + stats->dump() + "; expected mean/std, min/max or norm from another Normalize");
            }
            return ValueMap{{"tensor", out}, {"stats", *stats}};
          }
          const std::string mode = ctx.param_string("mode");
          torch::Tensor out;
          nlohmann::json stats;
          if (mode == "zscore") {
            const torch::Tensor mean = x.mean(axis, true), std = x.std(axis, /*unbiased=*/false, true);
            out = (x - mean) / safe(std);
            stats = {{"mean", tensor_json(mean)}, {"std", tensor_json(std)}};
          } else if (mode == "minmax") {
            const torch::Tensor mn = std::get<0>(x.min(axis, true)), mx = std::get<0>(x.max(axis, true));
            out = (x - mn) / safe(mx - mn);
            stats = {{"min", tensor_json(mn)}, {"max", tensor_json(mx)}};
          } else {
            const torch::Tensor norm = x.norm(2, axis, true);
            out = x / safe(norm);
            stats = {{"norm", tensor_json(norm)}};
          }
          return ValueMap{{"tensor", out}, {"stats", stats}};
        });
}

/// A seed numpy accepts (0 to 2^32 - 1), or a failure naming the param.
uint32_t numpy_seed(const NodeContext& ctx, const std::string& param) {
  const int64_t seed = ctx.param_int(param);
  if (seed < 0 || seed > 0xffffffffLL)
    NodeContext::fail_param(param,
                            "must be between 0 and 2**32 - 1 (numpy's RandomState), got " + std::to_string(seed));
  return static_cast<uint32_t>(seed);
}

void register_train_test_split(NodeRegistry& r) {
  r.add(
      {"TrainTestSplit",
       "Data",
       "Split (features, labels) into train and test sets",
       {def::in("features", DataType::kTensor, "Feature tensor [N, F]."),
        def::in("labels", DataType::kList, "Per-sample labels (LIST or LongTensor).")},
       {def::out("x_train", DataType::kTensor, "Training features."),
        def::out("y_train", DataType::kList, "Training labels."),
        def::out("x_test", DataType::kTensor, "Test features."), def::out("y_test", DataType::kList, "Test labels.")},
       {def::number("test_size", 0.2, "Fraction of samples reserved for testing. Must be in (0, 1).", 0.0, 1.0),
        def::integer("seed", 42, "Seed for reproducible shuffling."),
        def::boolean("stratify", false, "Preserve per-class proportions in both partitions.")}},
      [](NodeContext& ctx) {
        const auto& features_in = ctx.input_as<torch::Tensor>("features");
        if (features_in.dim() < 1)
          NodeContext::fail_input("features", "expected a tensor with a sample dimension, got a scalar");
        const std::vector<std::string> labels = read_labels(ctx, "labels");
        nodes::check_rows(features_in, "features", labels.size(), "labels");
        const double test_size = ctx.param_float("test_size");
        const uint32_t seed = numpy_seed(ctx, "seed");
        train::classic::SplitIndices s;
        try {
          s = ctx.param_bool("stratify") ? train::classic::stratified_split(labels, test_size, seed)
                                         : train::classic::train_test_split(features_in.size(0), test_size, seed);
        } catch (const std::invalid_argument& e) {
          NodeContext::fail_param(ctx.param_bool("stratify") ? "stratify" : "test_size", e.what());
        }
        const torch::Tensor features = features_in.detach().to(torch::kCPU).to(torch::kFloat32);
        auto rows = [&](const std::vector<int64_t>& idx) {
          return features.index_select(0, torch::tensor(idx, torch::kInt64));
        };
        auto pick = [&](const std::vector<int64_t>& idx) {
          std::vector<std::string> out;
          out.reserve(idx.size());
          for (int64_t i : idx) out.push_back(labels[i]);
          return to_list(out);
        };
        return ValueMap{
            {"x_train", rows(s.train)}, {"y_train", pick(s.train)}, {"x_test", rows(s.test)}, {"y_test", pick(s.test)}};
      });
}

void register_synthetic_dataset(NodeRegistry& r) {
  r.add({"SyntheticDataset",
         "Data",
         "Generate a 2D toy dataset (concentric circles, two moons, or isotropic blobs) via sklearn. Output matches "
         "CSVReader's shape, so TrainTestSplit and classifier nodes plug in directly.",
         {},
         {def::out("tensor", DataType::kTensor, "Float32 [N, 2] feature matrix."),
          def::out("labels", DataType::kList, "String class labels (e.g. ['0','1','0',...])."),
          def::out("columns", DataType::kList, "Feature column names: ['x0', 'x1'].")},
         {def::select("kind", "circles", {"circles", "moons", "blobs", "classification"},
                      "circles: two concentric rings (linearly inseparable). moons: two interlocking half-moons. "
                      "blobs: isotropic Gaussian clusters (linearly separable). classification: general sklearn "
                      "make_classification."),
          def::integer("n_samples", 200, "Total number of samples to generate.", 10),
          def::number("noise", 0.1, "Gaussian noise added to the points (circles/moons/classification only).", 0.0),
          def::number("factor", 0.5, "Inner-circle radius ratio for 'circles' (0<factor<1). Ignored for other kinds.",
                      0.0),
          def::integer("centers", 3, "Number of blob centers (for 'blobs' only).", 2),
          def::integer("seed", 42, "Random seed for reproducibility.")}},
        [](NodeContext& ctx) {
          const std::string kind = ctx.param_string("kind");
          const int64_t n = ctx.param_int("n_samples");
          const double noise = ctx.param_float("noise");
          const uint32_t seed = numpy_seed(ctx, "seed");
          namespace cl = train::classic;
          cl::Points p;
          if (kind == "circles")
            p = cl::make_circles(n, noise, std::clamp(ctx.param_float("factor"), 0.01, 0.99), seed);
          else if (kind == "moons")
            p = cl::make_moons(n, noise, seed);
          else if (kind == "blobs")
            p = cl::make_blobs(n, ctx.param_int("centers"), std::max(0.1, noise * 5.0), seed);
          else
            p = cl::make_classification(n, noise, seed);
          std::vector<std::string> labels;
          for (int64_t y : p.y) labels.push_back(std::to_string(y));
          return ValueMap{
              {"tensor", p.x.to(torch::kFloat32)}, {"labels", to_list(labels)}, {"columns", to_list({"x0", "x1"})}};
        });
}

}  // namespace

void nodes::register_data_table_nodes(NodeRegistry& r) {
  register_csv_reader(r);
  register_column_selector(r);
  register_normalize(r);
  register_train_test_split(r);
  register_synthetic_dataset(r);
}

}  // namespace codefy
