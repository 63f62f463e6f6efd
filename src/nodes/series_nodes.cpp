// Forecasting: TimeSeriesDataset cuts a series (generated, or a CSV's
// numeric columns) into windows and horizons, and Forecast runs a trained
// forecaster on one validation window and plots it against the truth.
#include "nodes/library.h"
#include "nodes/tensor_checks.h"
#include "plot/plot.h"
#include "train/series.h"
#include "util/text.h"

#include <torch/torch.h>

#include <limits>
#include <stdexcept>

namespace codefy {

using graph::DataType;

namespace {

/// `p`, which the graph may leave empty (the node checks when it needs it).
graph::ParamDef not_required(graph::ParamDef p) {
  p.required = false;
  return p;
}

/// The most steps x features a series may have: 64M values (256 MB of
/// float32), past any lesson or laptop forecast.
constexpr double kMaxSeriesValues = 64.0 * 1024 * 1024;

/// A CSV's numeric columns as [rows, columns] (a header row is expected).
torch::Tensor series_from_csv(NodeContext& ctx) {
  const auto path = ctx.param_path("path");
  const train::CsvTable table = train::read_csv_table(path, true);
  std::vector<int64_t> numeric;
  for (size_t c = 0; c < table.header.size(); ++c) {
    bool all = !table.rows.empty();
    for (const auto& row : table.rows)
      if (!train::parse_number(row[c])) {
        all = false;
        break;
      }
    if (all) numeric.push_back(static_cast<int64_t>(c));
  }
  if (numeric.empty()) NodeContext::fail_param("path", path.string() + " has no column of numbers only");
  torch::Tensor x = torch::empty({static_cast<int64_t>(table.rows.size()), static_cast<int64_t>(numeric.size())});
  auto a = x.accessor<float, 2>();
  for (size_t r = 0; r < table.rows.size(); ++r)
    for (size_t j = 0; j < numeric.size(); ++j)
      a[static_cast<int64_t>(r)][static_cast<int64_t>(j)] =
          static_cast<float>(*train::parse_number(table.rows[r][static_cast<size_t>(numeric[j])]));
  return x;
}

void register_time_series_dataset(NodeRegistry& r) {
  graph::NodeDef d{
      "TimeSeriesDataset",
      "Data",
      "Sliding windows over a multi-feature series, for forecasting: each sample is `window` steps of every "
      "feature, its target the next `horizon` steps of the `target` feature. The series is generated (seasonal + "
      "trend + noise, from `seed`) or read from a CSV's numeric columns. The split is by time: every validation "
      "target comes after every training one.",
      {},
      {def::out("train_dataset", DataType::kDataset,
                "Training windows: inputs [N, window, features], targets [N, horizon]"),
       def::out("val_dataset", DataType::kDataset, "Validation windows, later in time"),
       def::out("series", DataType::kTensor, "The whole series [steps, features], standardised when asked")},
      {def::select("source", "synthetic", {"synthetic", "csv"}, "Generate the series, or read it from `path`"),
       not_required(def::file("path", "", "CSV with a header row; its numeric columns are the features (source=csv)",
                              graph::ParamType::kDataFile)),
       def::integer("steps", 8192, "Length of the generated series", 2),
       def::integer("features", 32, "Features of the generated series", 1),
       def::number("noise", 0.1, "Standard deviation of the generated series' noise", 0.0),
       def::integer("window", 256, "Input steps per sample", 1),
       def::integer("horizon", 16, "Steps to forecast after each window", 1),
       def::integer("target", 0, "Column forecast (0: the first)", 0),
       def::integer("stride", 1, "Steps between neighbouring windows", 1),
       def::number("val_fraction", 0.2, "Share of the series, at its end, kept for validation", 0.01, 0.99),
       def::boolean("normalize", true, "Standardise each feature with the training part's mean and std"),
       def::integer("seed", 0, "Seed of the generated series")}};
  r.add(std::move(d), [](NodeContext& ctx) {
    torch::Tensor series;
    if (ctx.param_string("source") == "csv") {
      if (ctx.param_string("path").empty()) NodeContext::fail_param("path", "source=csv needs a CSV file");
      series = series_from_csv(ctx);
    } else {
      train::SeriesOptions o;
      o.steps = ctx.param_int("steps");
      o.features = ctx.param_int("features");
      o.noise = ctx.param_float("noise");
      o.seed = static_cast<uint64_t>(ctx.param_int("seed"));
      if (static_cast<double>(o.steps) * static_cast<double>(o.features) > kMaxSeriesValues)
        NodeContext::fail_param("steps", "steps x features = " + std::to_string(o.steps * o.features) +
                                             " values, more than a generated series may have (64M)");
      series = train::make_series(o);
    }
    train::WindowOptions w;
    w.window = ctx.param_int("window");
    w.horizon = ctx.param_int("horizon");
    w.target = ctx.param_int("target");
    w.stride = ctx.param_int("stride");
    w.val_fraction = ctx.param_float("val_fraction");
    w.normalize = ctx.param_bool("normalize");
    train::WindowedSeries ws;
    try {
      ws = train::make_windows(series, w);
    } catch (const train::SeriesOptionError& e) {
      NodeContext::fail_param(e.option(), e.message());
    }
    return ValueMap{{"train_dataset", std::make_shared<const train::Dataset>(std::move(ws.train))},
                    {"val_dataset", std::make_shared<const train::Dataset>(std::move(ws.val))},
                    {"series", ws.series}};
  });
}

void register_forecast(NodeRegistry& r) {
  graph::NodeDef d{
      "Forecast",
      "Training",
      "Run a trained forecaster on one window of a data set and plot its forecast against the truth, after the "
      "last `history` steps of the target the window ends with.",
      {def::in("model", DataType::kModel, "Trained forecaster: [1, window, features] to [1, horizon]"),
       def::in("dataset", DataType::kDataset, "Windows and horizons (TimeSeriesDataset's val_dataset)")},
      {def::out("forecast", DataType::kTensor, "The forecast, [horizon]"),
       def::out("truth", DataType::kTensor, "What followed the window, [horizon]"),
       def::out("mse", DataType::kScalar, "Mean squared error of this forecast"),
       def::out("image", DataType::kString, "Base64 PNG: history, truth and forecast")},
      {def::integer("sample", -1, "Which window (-1: the last)"),
       def::integer("history", 64, "Steps of the window drawn before the forecast", 0),
       def::integer("target", 0, "The window's column that was forecast (as TimeSeriesDataset's target)", 0),
       def::text("title", "Forecast against the truth", "Plot title"), def::device("Where to run")}};
  d.cacheable = false;  // reads a model training may change
  d.reports_results = true;
  r.add(std::move(d), [](NodeContext& ctx) {
    auto model = ctx.input_as<train::ModelPtr>("model");
    const auto& ds = ctx.input_as<train::DatasetPtr>("dataset");
    if (ds->size() == 0) NodeContext::fail_input("dataset", "is empty");
    if (ds->inputs.dim() != 3 || ds->targets.dim() != 2)
      NodeContext::fail_input("dataset", "expects windows [N, window, features] and horizons [N, horizon], got " +
                                             nodes::shape_text(ds->inputs.sizes()) + " and " +
                                             nodes::shape_text(ds->targets.sizes()));
    int64_t i = ctx.param_int("sample");
    if (i < 0) i += ds->size();
    if (i < 0 || i >= ds->size())
      NodeContext::fail_param(
          "sample", "window " + std::to_string(ctx.param_int("sample")) + " of " + std::to_string(ds->size()));
    const int64_t target = ctx.param_int("target");
    if (target >= ds->inputs.size(2))
      NodeContext::fail_param(
          "target", "column " + std::to_string(target) + " of " + std::to_string(ds->inputs.size(2)) + " features");
    const torch::Tensor window = ds->inputs[i];  // [window, features]
    const torch::Tensor truth = ds->targets[i].contiguous();
    const c10::Device device = ctx.device();
    torch::Tensor forecast;
    {
      torch::NoGradGuard no_grad;
      model->to(device);
      model->eval();
      forecast = model->forward(window.unsqueeze(0).to(device)).to(torch::kCPU, torch::kFloat32).reshape(-1);
    }
    if (forecast.numel() != truth.numel())
      NodeContext::fail_input("model", "forecasts " + std::to_string(forecast.numel()) + " values but the horizon is " +
                                           std::to_string(truth.numel()) + " steps");
    const int64_t h = std::min<int64_t>(ctx.param_int("history"), window.size(0));
    const torch::Tensor past = window.select(1, target).narrow(0, window.size(0) - h, h).to(torch::kFloat32);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    plot::PlotRequest req;
    req.title = ctx.param_string("title");
    req.y_label = "Target";
    const std::string png = plot::render_lines_png(
        {{"truth", torch::cat({past, truth})}, {"forecast", torch::cat({torch::full({h}, nan), forecast})}}, req);
    return ValueMap{{"forecast", forecast},
                    {"truth", truth},
                    {"mse", (forecast - truth).pow(2).mean().item<double>()},
                    {"image", Image{util::base64_encode(png)}}};
  });
}

}  // namespace

void nodes::register_series_nodes(NodeRegistry& r) {
  register_time_series_dataset(r);
  register_forecast(r);
}

}  // namespace codefy
