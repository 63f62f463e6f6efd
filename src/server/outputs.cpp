// The inspector's view of captured outputs: rows, slicing, value summaries.
#include "server/outputs.h"

#include "util/parse.h"
#include "util/text.h"

#include <torch/torch.h>

#include <cmath>
#include <sstream>

namespace codefy::server {

namespace {

/// One number of a slice piece: blank is "none"; anything else must be whole.
c10::optional<int64_t> slice_number(const std::string& s, const std::string& piece) {
  if (s.empty()) return c10::nullopt;
  const auto v = util::parse_int(s);
  if (!v) throw HttpError(400, "invalid slice: bad slice piece: '" + piece + "'");
  return *v;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

std::vector<torch::indexing::TensorIndex> parse_slice(const std::string& text) {
  using torch::indexing::Slice;
  std::vector<torch::indexing::TensorIndex> index;
  if (trim(text).empty()) return index;
  std::stringstream in(text);
  std::string raw;
  while (std::getline(in, raw, ',')) {
    const std::string piece = trim(raw);
    if (piece.empty() || piece == ":") {
      index.emplace_back(Slice());
      continue;
    }
    std::vector<std::string> parts;
    std::stringstream p(piece);
    std::string part;
    while (std::getline(p, part, ':')) parts.push_back(trim(part));
    if (!piece.empty() && piece.back() == ':') parts.push_back("");
    if (parts.size() == 1) {
      index.emplace_back(*slice_number(parts[0], piece));
      continue;
    }
    if (parts.size() > 3) throw HttpError(400, "invalid slice: bad slice piece: '" + piece + "'");
    const auto start = slice_number(parts[0], piece), stop = slice_number(parts[1], piece);
    const auto step = parts.size() == 3 ? slice_number(parts[2], piece) : c10::nullopt;
    if (step && *step <= 0) throw HttpError(400, "slice failed: slice step must be positive");
    // c10::optional<int64_t> converts to 2.x's optional<SymInt> too.
    index.emplace_back(
        Slice(c10::optional<int64_t>(start), c10::optional<int64_t>(stop), c10::optional<int64_t>(step)));
  }
  return index;
}

nlohmann::json number(double v, bool integral) {
  if (!std::isfinite(v)) return nullptr;  // JSON has no NaN/Inf
  if (integral) return static_cast<int64_t>(v);
  return v;
}

/// Nested lists of a contiguous CPU double tensor's values.
nlohmann::json nested(const double* data, const std::vector<int64_t>& shape, size_t dim, bool integral, bool boolean,
                      int64_t& offset) {
  if (dim == shape.size()) {
    const double v = data[offset++];
    return boolean ? nlohmann::json(v != 0) : number(v, integral);
  }
  nlohmann::json a = nlohmann::json::array();
  for (int64_t i = 0; i < shape[dim]; ++i) a.push_back(nested(data, shape, dim + 1, integral, boolean, offset));
  return a;
}

double round6(double v) { return std::round(v * 1e6) / 1e6; }

}  // namespace

int64_t capture_bytes(const RunCapture& c) {
  store::StorageCounter counter;
  for (const auto& [id, ports] : c.nodes)
    for (const auto& [port, value] : ports) count_bytes(value, counter);
  return counter.total();
}

std::string output_type(const Value& v) {
  if (std::holds_alternative<torch::Tensor>(v)) return "tensor";
  if (std::holds_alternative<train::ModelPtr>(v)) return "model";
  if (std::holds_alternative<double>(v)) return "scalar";
  if (std::holds_alternative<std::string>(v) || std::holds_alternative<Image>(v)) return "string";
  if (const auto* j = std::get_if<nlohmann::json>(&v); j && j->is_array()) return "list";
  std::string kind = value_kind(v);
  for (auto& ch : kind) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return kind;
}

nlohmann::json output_row(const std::string& node_id, const std::string& port, const Value& v) {
  nlohmann::json shape = nullptr;
  if (const auto* t = std::get_if<torch::Tensor>(&v); t && t->defined()) shape = t->sizes().vec();
  return {{"node_id", node_id}, {"port", port}, {"type", output_type(v)}, {"full_shape", shape}};
}

nlohmann::json output_values(const Value& v, const std::string& slice, int64_t max_elements) {
  const auto* t = std::get_if<torch::Tensor>(&v);
  if (!t || !t->defined()) {
    // Plain data whole (a metrics dict reads as its keys), else the run's
    // summary without its one-line repr: the inspector lists the fields.
    if (const auto* data = std::get_if<nlohmann::json>(&v)) {
      if (data->dump().size() <= 2000) return {{"type", output_type(v)}, {"value", *data}};
      return {{"type", output_type(v)}, {"size", data->size()}};
    }
    nlohmann::json j = summarize(v);
    j["type"] = output_type(v);
    j.erase("repr");
    return j;
  }
  const auto index = parse_slice(slice);
  torch::Tensor s;
  try {
    s = index.empty() ? *t : t->index(index);
  } catch (const c10::Error& e) {
    const std::string m = e.what_without_backtrace();
    throw HttpError(400, "slice failed: " + util::first_line(m));
  }
  if (s.numel() > max_elements)
    throw HttpError(413, "output has " + std::to_string(s.numel()) + " elements (max " + std::to_string(max_elements) +
                             "); supply a narrower 'slice' parameter");
  const bool boolean = s.scalar_type() == torch::kBool;
  const bool integral = !boolean && !c10::isFloatingType(s.scalar_type()) && !c10::isComplexType(s.scalar_type());
  const torch::Tensor d = s.detach().to(torch::kCPU).to(torch::kDouble).contiguous();
  int64_t offset = 0;
  nlohmann::json j = {{"type", "tensor"},
                      {"full_shape", t->sizes().vec()},
                      {"dtype", torch_dtype_name(t->scalar_type())},
                      {"slice", slice},
                      {"sliced_shape", s.sizes().vec()},
                      {"values", nested(d.data_ptr<double>(), s.sizes().vec(), 0, integral, boolean, offset)},
                      {"truncated", false}};
  if (!boolean && d.numel() > 0) {
    const double lo = d.min().item<double>(), hi = d.max().item<double>(), mean = d.mean().item<double>();
    j["min"] = integral ? number(lo, true) : number(round6(lo), false);
    j["max"] = integral ? number(hi, true) : number(round6(hi), false);
    j["mean"] = number(round6(mean), false);
  }
  return j;
}

}  // namespace codefy::server
