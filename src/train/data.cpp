// Datasets (idx/MNIST, CSV, synthetic) and the reproducible data loader.
#include "train/data.h"

#include "train/augment.h"
#include "util/random.h"
#include "util/text.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <tuple>

namespace codefy::train {

namespace fs = std::filesystem;

namespace {

/// A piece of a file the user chose, as an error message may quote it: cut short, control
/// characters shown as '?', so a message never carries much of a file that is not a CSV.
std::string quoted(const std::string& text, size_t max = 40) {
  std::string out;
  for (const char c : text.substr(0, max)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return text.size() > max ? out + "…" : out;
}

/// A CSV header's names as an error message lists them: each quoted(), at most 20.
std::string column_list(const std::vector<std::string>& header) {
  std::vector<std::string> names;
  for (size_t i = 0; i < header.size() && i < 20; ++i) names.push_back(quoted(header[i]));
  std::string list = util::join(names, ", ");
  return header.size() > 20 ? list + " and " + std::to_string(header.size() - 20) + " more" : list;
}

// ---------------------------------------------------------------------------
// idx files

/// Sequential byte reader over a plain or gzip file. gzread could read plain
/// files too, but a plain FILE* keeps error messages about the real cause.
class ByteReader {
 public:
  explicit ByteReader(const fs::path& path) : path_(path) {
    unsigned char magic[2] = {0, 0};
    {
      std::FILE* probe = std::fopen(path.c_str(), "rb");
      if (probe == nullptr) {
        throw std::runtime_error("cannot open idx file " + path.string() + ": " + std::strerror(errno));
      }
      size_t got = std::fread(magic, 1, 2, probe);
      std::fclose(probe);
      gzip_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    }
    if (gzip_) {
      gz_ = gzopen(path.c_str(), "rb");
      if (gz_ == nullptr) throw std::runtime_error("cannot open gzip idx file " + path.string());
      gzbuffer(gz_, 1 << 17);
    } else {
      file_ = std::fopen(path.c_str(), "rb");
      if (file_ == nullptr) {
        throw std::runtime_error("cannot open idx file " + path.string() + ": " + std::strerror(errno));
      }
    }
  }
  ~ByteReader() {
    if (gz_ != nullptr) gzclose(gz_);
    if (file_ != nullptr) std::fclose(file_);
  }
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  /// Reads up to `size` bytes; returns how many were read (less only at the end).
  size_t read(void* out, size_t size) {
    auto* dst = static_cast<char*>(out);
    size_t total = 0;
    while (total < size) {
      if (gzip_) {
        // gzread takes an unsigned count: read in chunks well below its limit.
        unsigned chunk = static_cast<unsigned>(std::min<size_t>(size - total, 1u << 30));
        int n = gzread(gz_, dst + total, chunk);
        if (n < 0) {
          int code = 0;
          const char* msg = gzerror(gz_, &code);
          throw std::runtime_error("corrupt or truncated gzip idx file " + path_.string() + ": " +
                                   (msg != nullptr ? msg : "gzread failed"));
        }
        if (n == 0) break;
        total += static_cast<size_t>(n);
      } else {
        size_t n = std::fread(dst + total, 1, size - total, file_);
        if (n == 0) {
          if (std::ferror(file_)) throw std::runtime_error("read error in idx file " + path_.string());
          break;
        }
        total += n;
      }
    }
    // A gzip stream cut short reports its error only at the end of the data.
    if (gzip_ && total < size) {
      int code = 0;
      const char* msg = gzerror(gz_, &code);
      if (code != Z_OK && code != Z_STREAM_END) {
        throw std::runtime_error("corrupt or truncated gzip idx file " + path_.string() + ": " +
                                 (msg != nullptr ? msg : "gzread failed"));
      }
    }
    return total;
  }

 private:
  fs::path path_;
  bool gzip_ = false;
  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
};

uint32_t read_be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// ---------------------------------------------------------------------------
// MNIST

/// torchvision's file prefixes for a split.
std::string split_prefix(bool train) { return train ? "train" : "t10k"; }

/// The existing file among `<dir>/<base>` and `<dir>/<base>.gz` (plain first:
/// torchvision keeps both after extracting, and plain reads faster).
/// Every candidate goes into `looked_at` (marked when it exists), so the
/// error for an incomplete folder shows what was there and what was not.
std::optional<fs::path> find_variant(const fs::path& dir, const std::string& base,
                                     std::vector<std::string>& looked_at) {
  std::optional<fs::path> found;
  for (const fs::path& candidate : {dir / base, dir / (base + ".gz")}) {
    std::error_code ec;
    const bool exists = fs::is_regular_file(candidate, ec);
    looked_at.push_back(candidate.string() + (exists ? " (found)" : ""));
    if (exists && !found) found = candidate;
  }
  return found;
}

// ---------------------------------------------------------------------------
// CSV

struct CsvRecord {
  std::vector<std::string> fields;
  std::vector<bool> quoted;  // field was quoted: keep its spaces verbatim
  int64_t line = 0;          // 1-based line where the record starts
};

/// Splits RFC 4180 text: comma separated, double-quoted fields may hold
/// commas, newlines and "" for a quote. Blank lines are skipped.
std::vector<CsvRecord> parse_csv(const std::string& text, const fs::path& path) {
  std::vector<CsvRecord> records;
  size_t i = 0;
  int64_t line = 1;
  // A UTF-8 byte order mark (Excel writes one) is not part of the first name.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;
  const size_t n = text.size();
  while (i < n) {
    CsvRecord record;
    record.line = line;
    std::string field;
    bool field_quoted = false;
    bool end_of_record = false;
    while (!end_of_record) {
      if (i < n && text[i] == '"' && field.find_first_not_of(" \t") == std::string::npos) {
        // Quoted field (leading blanks before the quote are tolerated).
        field.clear();
        field_quoted = true;
        const int64_t quote_line = line;
        ++i;
        while (true) {
          if (i >= n) {
            throw std::runtime_error("unterminated quoted field starting at line " + std::to_string(quote_line) +
                                     " of " + path.string());
          }
          char c = text[i];
          if (c == '"') {
            if (i + 1 < n && text[i + 1] == '"') {
              field.push_back('"');
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (c == '\n') ++line;
          field.push_back(c);
          ++i;
        }
        // Only blanks may follow the closing quote before the separator.
        while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i;
        if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
          throw std::runtime_error("unexpected character after closing quote at line " + std::to_string(line) + " of " +
                                   path.string());
        }
      }
      if (i >= n || text[i] == '\n' || text[i] == '\r') {
        end_of_record = true;
        if (i < n && text[i] == '\r') ++i;
        if (i < n && text[i] == '\n') ++i;
        ++line;
      } else if (text[i] == ',') {
        ++i;
      } else {
        field.push_back(text[i++]);
        continue;
      }
      record.fields.push_back(std::move(field));
      record.quoted.push_back(field_quoted);
      field.clear();
      field_quoted = false;
    }
    for (size_t f = 0; f < record.fields.size(); ++f) {
      if (record.quoted[f]) continue;
      std::string& s = record.fields[f];
      size_t b = s.find_first_not_of(" \t");
      size_t e = s.find_last_not_of(" \t");
      s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    }
    bool blank = record.fields.size() == 1 && record.fields[0].empty() && !record.quoted[0];
    if (!blank) records.push_back(std::move(record));
  }
  return records;
}

}  // namespace

std::optional<double> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  if (*begin == '+' && end - begin > 1 && begin[1] != '-') ++begin;  // from_chars rejects an explicit plus sign
  double value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// ---------------------------------------------------------------------------

torch::Tensor read_idx_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error("idx file not found: " + path.string());
  if (!fs::is_regular_file(path, ec)) throw std::runtime_error("idx path is not a file: " + path.string());

  ByteReader reader(path);
  unsigned char header[4];
  size_t got = reader.read(header, 4);
  if (got < 4) throw std::runtime_error("truncated idx file (no header): " + path.string());
  const uint32_t magic = read_be32(header);
  // Byte 2 is the element type (0x08 = uint8), byte 3 the number of dims;
  // MNIST uses 0x801 for labels and 0x803 for images.
  if (magic != 0x00000801 && magic != 0x00000803) {
    throw std::runtime_error("not an idx file (magic " + hex32(magic) +
                             ", expected 0x00000801 or 0x00000803): " + path.string());
  }
  const size_t ndims = header[3];
  std::vector<int64_t> dims(ndims);
  unsigned char dim_bytes[4 * 3];
  if (reader.read(dim_bytes, 4 * ndims) < 4 * ndims) {
    throw std::runtime_error("truncated idx file (incomplete dimensions): " + path.string());
  }
  uint64_t numel = 1;
  for (size_t d = 0; d < ndims; ++d) {
    dims[d] = read_be32(dim_bytes + 4 * d);
    numel *= static_cast<uint64_t>(dims[d]);
    // Guards the allocation against a corrupt header (real files are < 50 MB).
    if (numel > (uint64_t{1} << 36)) throw std::runtime_error("idx file dimensions too large: " + path.string());
  }
  torch::Tensor out = torch::empty(dims, torch::kUInt8);
  got = reader.read(out.data_ptr<uint8_t>(), numel);
  if (got < numel) {
    throw std::runtime_error("truncated idx file: " + path.string() + " holds " + std::to_string(got) + " of " +
                             std::to_string(numel) + " data bytes");
  }
  unsigned char extra;
  if (reader.read(&extra, 1) != 0) {
    throw std::runtime_error("idx file has data beyond its declared dimensions: " + path.string());
  }
  return out;
}

std::vector<fs::path> mnist_search_dirs(const std::string& name, const fs::path& data_dir) {
  if (name != "MNIST" && name != "FashionMNIST") {
    throw std::invalid_argument("unknown idx dataset '" + name + "' (expected MNIST or FashionMNIST)");
  }
  if (data_dir.empty()) {
    return {name == "MNIST" ? fs::path("/usr/share/datasets/mnist") : fs::path("/usr/share/datasets/fashion-mnist")};
  }
  return {data_dir / name / "raw", data_dir / name, data_dir};
}

/// find_mnist_files, noting every place it looked in `looked_at`.
static std::vector<fs::path> find_mnist_files(const std::string& name, bool train, const fs::path& data_dir,
                                              std::vector<std::string>& looked_at) {
  const std::string prefix = split_prefix(train);
  for (const fs::path& dir : mnist_search_dirs(name, data_dir)) {
    auto images_path = find_variant(dir, prefix + "-images-idx3-ubyte", looked_at);
    auto labels_path = find_variant(dir, prefix + "-labels-idx1-ubyte", looked_at);
    if (images_path && labels_path) return {*images_path, *labels_path};
  }
  return {};
}

std::vector<fs::path> find_mnist_files(const std::string& name, bool train, const fs::path& data_dir) {
  std::vector<std::string> looked_at;
  return find_mnist_files(name, train, data_dir, looked_at);
}

Dataset load_mnist(const std::string& name, bool train, const fs::path& data_dir, bool normalize) {
  const std::string prefix = split_prefix(train);
  std::vector<std::string> looked_at;
  const auto files = find_mnist_files(name, train, data_dir, looked_at);
  if (!files.empty()) {
    const auto images_path = &files[0];
    const auto labels_path = &files[1];

    torch::Tensor images = read_idx_file(*images_path);
    torch::Tensor labels = read_idx_file(*labels_path);
    if (images.dim() != 3) throw std::runtime_error("expected an image idx file (3 dims): " + images_path->string());
    if (labels.dim() != 1) throw std::runtime_error("expected a label idx file (1 dim): " + labels_path->string());
    if (images.size(0) != labels.size(0)) {
      throw std::runtime_error(name + " " + prefix + " split: " + std::to_string(images.size(0)) + " images in " +
                               images_path->string() + " but " + std::to_string(labels.size(0)) + " labels in " +
                               labels_path->string());
    }
    if (labels.numel() > 0 && labels.max().item<int64_t>() > 9) {
      throw std::runtime_error("label above 9 in " + labels_path->string());
    }

    Dataset ds;
    ds.name = name;
    // Same arithmetic as torchvision's ToTensor (x / 255) then Normalize((0.5,), (0.5,)).
    ds.inputs = images.unsqueeze(1).to(torch::kFloat32).div_(255);
    if (normalize) ds.inputs.sub_(0.5).div_(0.5);
    ds.targets = labels.to(torch::kInt64);
    ds.num_classes = 10;
    std::error_code ec;
    const fs::path dir = images_path->parent_path();
    fs::path resolved = fs::canonical(dir, ec);
    ds.source = (ec ? dir : resolved).string();
    return ds;
  }
  std::string msg = name + " " + (train ? "train" : "test") + " split not found. Looked for:\n";
  for (const std::string& p : looked_at) msg += "  " + p + "\n";
  msg += "Codefy never downloads datasets: put the four idx files (optionally .gz) in one of these places";
  if (data_dir.empty()) {
    msg += name == "FashionMNIST" ? " (on Debian: apt install dataset-fashion-mnist)" : "";
  }
  msg += ", or set the data directory.";
  throw std::runtime_error(msg);
}

// ---------------------------------------------------------------------------

namespace {

/// The whole text of CSV file `path`; a missing or unreadable file says so.
std::string read_csv_text(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error("CSV file not found: " + path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open CSV file: " + path.string());
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

CsvTable read_csv_table(const fs::path& path, bool has_header) {
  std::vector<CsvRecord> records = parse_csv(read_csv_text(path), path);
  if (records.empty()) throw std::runtime_error("CSV file is empty: " + path.string());
  CsvTable t;
  const size_t num_columns = records.front().fields.size();
  if (has_header) {
    t.header = records.front().fields;
  } else {
    for (size_t c = 0; c < num_columns; ++c) t.header.push_back(std::to_string(c));
  }
  for (size_t r = has_header ? 1 : 0; r < records.size(); ++r) {
    if (records[r].fields.size() != num_columns) {
      throw std::runtime_error("ragged CSV row at line " + std::to_string(records[r].line) + " of " + path.string() +
                               ": " + std::to_string(records[r].fields.size()) + " fields, the first row has " +
                               std::to_string(num_columns));
    }
    t.rows.push_back(std::move(records[r].fields));
  }
  return t;
}

namespace {

/// A CSV file's records read for training: the header and the data rows
/// (1-based: records[r] for data row r), every row as wide as the header.
struct CsvRows {
  const fs::path& path;
  std::vector<CsvRecord> records;
  std::vector<std::string> header;

  size_t rows() const { return records.size() - 1; }
  const std::string& cell(size_t r, size_t c) const { return records[r].fields[c]; }
  /// Row r (1-based data row) as it appears in error messages.
  std::string where(size_t r) const {
    return "row " + std::to_string(r) + " (line " + std::to_string(records[r].line) + ") of " + path.string();
  }
  size_t column_index(const std::string& column) const {
    auto it = std::find(header.begin(), header.end(), column);
    if (it == header.end())
      throw std::runtime_error("unknown column '" + quoted(column) + "' in " + path.string() +
                               "; available columns: " + column_list(header));
    return static_cast<size_t>(it - header.begin());
  }
};

CsvRows read_csv_rows(const fs::path& path) {
  CsvRows t{path, parse_csv(read_csv_text(path), path), {}};
  if (t.records.empty()) throw std::runtime_error("CSV file is empty: " + path.string());
  t.header = t.records.front().fields;
  const size_t num_columns = t.header.size();
  // A table to train on has features and a target: a one-column file is not one (and its "header"
  // is the first line of whatever file it is, which the message must not show).
  if (num_columns < 2)
    throw std::runtime_error(path.string() +
                             " is not a CSV table: its first line has one column (features and a "
                             "target column are needed, separated by commas)");
  if (t.rows() == 0) throw std::runtime_error("CSV file has a header but no data rows: " + path.string());
  for (size_t r = 1; r < t.records.size(); ++r) {
    if (t.records[r].fields.size() != num_columns) {
      throw std::runtime_error("ragged CSV row " + std::to_string(r) + " (line " + std::to_string(t.records[r].line) +
                               ") of " + path.string() + ": " + std::to_string(t.records[r].fields.size()) +
                               " fields, the header has " + std::to_string(num_columns));
    }
  }
  return t;
}

/// The feature columns: those named, else every other column that holds a
/// number at all (a text column such as an id or a name is left out; a mostly
/// numeric column with a bad cell is an error when it is read).
std::vector<size_t> feature_columns(const CsvRows& t, const CsvOptions& options, size_t target) {
  std::vector<size_t> features;
  if (!options.feature_columns.empty()) {
    for (const std::string& column : options.feature_columns) {
      size_t c = t.column_index(column);
      if (c == target) throw std::runtime_error("column '" + column + "' is both a feature and the target");
      features.push_back(c);
    }
    return features;
  }
  for (size_t c = 0; c < t.header.size(); ++c) {
    if (c == target) continue;
    bool any_numeric = false;
    for (size_t r = 1; r <= t.rows() && !any_numeric; ++r) any_numeric = parse_number(t.cell(r, c)).has_value();
    if (any_numeric) features.push_back(c);
  }
  if (features.empty())
    throw std::runtime_error("no numeric feature columns in " + t.path.string() +
                             " (columns: " + column_list(t.header) + ")");
  return features;
}

torch::Tensor feature_tensor(const CsvRows& t, const std::vector<size_t>& features) {
  torch::Tensor inputs =
      torch::empty({static_cast<int64_t>(t.rows()), static_cast<int64_t>(features.size())}, torch::kFloat32);
  float* x = inputs.data_ptr<float>();
  for (size_t r = 1; r <= t.rows(); ++r) {
    for (const size_t f : features) {
      const std::string& cell = t.cell(r, f);
      auto value = parse_number(cell);
      if (!value)
        throw std::runtime_error("non-numeric value '" + quoted(cell) + "' in feature column '" + quoted(t.header[f]) +
                                 "' at " + t.where(r));
      *x++ = static_cast<float>(*value);
    }
  }
  return inputs;
}

/// Class indices for the target column: numbers in numeric order (labels
/// "2", "10" map to 0, 1, not "10" < "2"), other text in text order.
std::pair<torch::Tensor, int64_t> class_labels(const CsvRows& t, size_t target) {
  bool all_numeric = true;
  for (size_t r = 1; r <= t.rows(); ++r) {
    const std::string& cell = t.cell(r, target);
    if (cell.empty()) throw std::runtime_error("empty target in column '" + t.header[target] + "' at " + t.where(r));
    all_numeric = all_numeric && parse_number(cell).has_value();
  }
  std::vector<int64_t> labels(t.rows());
  int64_t k = 0;
  const auto index_classes = [&](auto key) {
    std::map<decltype(key(size_t{1})), int64_t> classes;
    for (size_t r = 1; r <= t.rows(); ++r) classes.emplace(key(r), 0);
    for (auto& entry : classes) entry.second = k++;
    for (size_t r = 1; r <= t.rows(); ++r) labels[r - 1] = classes.at(key(r));
  };
  if (all_numeric)
    index_classes([&](size_t r) { return *parse_number(t.cell(r, target)); });
  else
    index_classes([&](size_t r) { return t.cell(r, target); });
  return {torch::tensor(labels, torch::kInt64), k};
}

torch::Tensor regression_targets(const CsvRows& t, size_t target) {
  torch::Tensor y = torch::empty({static_cast<int64_t>(t.rows()), 1}, torch::kFloat32);
  float* out = y.data_ptr<float>();
  for (size_t r = 1; r <= t.rows(); ++r) {
    const std::string& cell = t.cell(r, target);
    auto value = parse_number(cell);
    if (!value)
      throw std::runtime_error("non-numeric value '" + cell + "' in target column '" + t.header[target] + "' at " +
                               t.where(r));
    out[r - 1] = static_cast<float>(*value);
  }
  return y;
}

}  // namespace

Dataset load_csv(const fs::path& path, const CsvOptions& options) {
  const CsvRows t = read_csv_rows(path);
  const size_t target = options.target_column.empty() ? t.header.size() - 1 : t.column_index(options.target_column);
  const std::vector<size_t> features = feature_columns(t, options, target);

  Dataset ds;
  ds.name = path.stem().string();
  std::error_code ec;
  fs::path resolved = fs::canonical(path, ec);
  ds.source = (ec ? path : resolved).string();
  ds.inputs = feature_tensor(t, features);
  if (options.classification) {
    std::tie(ds.targets, ds.num_classes) = class_labels(t, target);
  } else {
    ds.targets = regression_targets(t, target);
    ds.num_classes = 0;
  }
  return ds;
}

// ---------------------------------------------------------------------------

Dataset make_synthetic(const SyntheticOptions& options) {
  const bool classification = options.task == "classification";
  if (!classification && options.task != "regression") {
    throw std::invalid_argument("synthetic task must be 'classification' or 'regression', got '" + options.task + "'");
  }
  if (options.num_samples < 1) throw std::invalid_argument("synthetic num_samples must be >= 1");
  if (options.num_features < 1) throw std::invalid_argument("synthetic num_features must be >= 1");
  if (classification && options.num_classes < 2) throw std::invalid_argument("synthetic num_classes must be >= 2");
  if (!(options.noise >= 0) || !std::isfinite(options.noise)) {
    throw std::invalid_argument("synthetic noise must be a finite number >= 0");
  }

  // A local generator: the global RNG (model init, dropout) stays untouched
  // and the data depends on the seed alone.
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  const int64_t n = options.num_samples;
  const int64_t f = options.num_features;

  Dataset ds;
  ds.name = "synthetic_" + options.task;
  if (classification) {
    const int64_t k = options.num_classes;
    // Centres on a circle in the first two features (on a line with one
    // feature), neighbours at least 3 apart: separable up to noise ~1.
    torch::Tensor centres = torch::zeros({k, f}, torch::kFloat64);
    auto c = centres.accessor<double, 2>();
    const double pi = 3.14159265358979323846;
    const double radius = std::max(3.0, 1.5 / std::sin(pi / static_cast<double>(k)));
    for (int64_t i = 0; i < k; ++i) {
      if (f >= 2) {
        const double angle = 2.0 * pi * static_cast<double>(i) / static_cast<double>(k);
        c[i][0] = radius * std::cos(angle);
        c[i][1] = radius * std::sin(angle);
      } else {
        c[i][0] = 3.0 * (static_cast<double>(i) - static_cast<double>(k - 1) / 2.0);
      }
    }
    // Labels cycle 0..k-1 so that any contiguous slice is balanced.
    torch::Tensor labels = torch::arange(n, torch::kInt64).remainder(k);
    torch::Tensor noise = torch::randn({n, f}, gen, torch::kFloat64);
    ds.inputs = centres.index_select(0, labels).add_(noise.mul_(options.noise)).to(torch::kFloat32);
    ds.targets = labels;
    ds.num_classes = k;
  } else {
    // Draw order is fixed (w, b, x, noise) so the same seed gives the same data.
    torch::Tensor w = torch::randn({f, 1}, gen, torch::kFloat64);
    torch::Tensor b = torch::randn({1}, gen, torch::kFloat64);
    torch::Tensor x = torch::randn({n, f}, gen, torch::kFloat64);
    torch::Tensor noise = torch::randn({n, 1}, gen, torch::kFloat64);
    // Double precision, rounded once: float32 results do not depend on how
    // the matmul happens to be blocked.
    ds.inputs = x.to(torch::kFloat32);
    ds.targets = x.matmul(w).add_(b).add_(noise.mul_(options.noise)).to(torch::kFloat32);
    ds.num_classes = 0;
  }
  return ds;
}

// ---------------------------------------------------------------------------

DataLoader::DataLoader(DatasetPtr dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  if (!dataset_) throw std::invalid_argument("DataLoader needs a dataset");
  if (options_.batch_size < 1) {
    throw std::invalid_argument("batch_size must be >= 1, got " + std::to_string(options_.batch_size));
  }
  if (dataset_->inputs.defined() != dataset_->targets.defined() ||
      (dataset_->inputs.defined() && dataset_->targets.size(0) != dataset_->inputs.size(0))) {
    throw std::invalid_argument("dataset '" + dataset_->name + "' has different numbers of inputs and targets");
  }
  if (options_.num_replicas < 1 || options_.rank < 0 || options_.rank >= options_.num_replicas) {
    throw std::invalid_argument("shard rank " + std::to_string(options_.rank) + " of " +
                                std::to_string(options_.num_replicas) + " replicas is out of range");
  }
}

int64_t DataLoader::num_samples() const {
  const int64_t n = dataset_->size();
  const int64_t r = options_.num_replicas;
  return r == 1 ? n : (n + r - 1) / r;
}

int64_t DataLoader::num_batches() const {
  const int64_t n = num_samples();
  const int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

torch::Tensor DataLoader::epoch_order(int64_t epoch) const {
  if (epoch < 0) throw std::invalid_argument("epoch must be >= 0, got " + std::to_string(epoch));
  const int64_t n = dataset_->size();
  torch::Tensor order;
  if (!options_.shuffle) {
    order = torch::arange(n, torch::kInt64);
  } else {
    // The generator depends on (seed, epoch) only: epoch e of a resumed run
    // gets the order it would have had without the interruption, and every
    // rank of a data-parallel run gets the same one.
    const uint64_t mixed = util::splitmix64(util::splitmix64(options_.seed) ^ static_cast<uint64_t>(epoch));
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(mixed);
    order = torch::randperm(n, gen, torch::kInt64);
  }
  const int64_t replicas = options_.num_replicas;
  if (replicas == 1 || n == 0) return order;
  // DistributedSampler: pad with the order's start (repeated when the
  // dataset is smaller than the padding) to a multiple of the replicas, then
  // take every replicas-th position from this rank.
  const int64_t total = num_samples() * replicas;
  if (total > n) order = order.repeat({(total + n - 1) / n}).slice(0, 0, total);
  return order.slice(0, options_.rank, total, replicas).contiguous();
}

bool pinning_available() {
  static const bool available = torch::cuda::is_available();
  return available;
}

Batch DataLoader::batch(const torch::Tensor& order, int64_t index, int64_t epoch) const {
  const int64_t n = num_samples();
  if (!order.defined() || order.dim() != 1 || order.size(0) != n || order.scalar_type() != torch::kInt64) {
    throw std::invalid_argument("batch order must be an int64 [" + std::to_string(n) + "] tensor from epoch_order");
  }
  if (index < 0 || index >= num_batches()) {
    throw std::out_of_range("batch index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(num_batches()) + ")");
  }
  const int64_t begin = index * options_.batch_size;
  const int64_t end = std::min(begin + options_.batch_size, n);
  torch::Tensor idx = order.slice(0, begin, end);
  torch::Tensor inputs = dataset_->inputs.index_select(0, idx);
  if (dataset_->augment) inputs = dataset_->augment->apply_batch(inputs, idx, options_.seed, epoch);
  torch::Tensor targets = dataset_->targets.index_select(0, idx);
  if (options_.pin_memory && pinning_available()) {
    inputs = inputs.pin_memory();
    targets = targets.pin_memory();
  }
  return Batch{inputs, targets};
}

}  // namespace codefy::train
