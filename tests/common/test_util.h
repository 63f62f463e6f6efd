// Small helpers every test area uses.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace codefy::testing {

/// A fresh folder under the system temp dir, removed with its contents.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    std::string pattern = (std::filesystem::temp_directory_path() / ("codefy_" + tag + "_XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    // A test may have made it read-only.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Parses a JSON file; throws naming the path when it cannot be read.
inline nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

/// A file's bytes ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Writes `bytes` to `path`, creating its folder; throws when it cannot.
inline void write_file(const std::filesystem::path& path, const std::string& bytes) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

/// Whether `actual` is within a relative 1e-5 of PyTorch's `expected` (or
/// `abs_floor` for values near zero); the message names `what`.
inline ::testing::AssertionResult close_to_pytorch(double actual, double expected, const std::string& what,
                                                   double abs_floor) {
  if (std::abs(actual - expected) <= std::max(abs_floor, 1e-5 * std::abs(expected)))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": got " << actual << ", PyTorch " << expected;
}

/// Writes `j` to `path` (test fixtures).
inline void write_json_file(const std::filesystem::path& path, const nlohmann::json& j) {
  std::ofstream out(path);
  out << j.dump(2);
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

/// A training graph as the editor saves it: Start → SequentialModel
/// (in-hidden-out MLP with ReLU) and ToyDataset → DataLoader → TrainingLoop
/// with a cross-entropy Loss and an Optimizer; each node's params as given.
inline nlohmann::json mlp_training_graph(const std::string& name, int64_t in, int64_t hidden, int64_t out,
                                         const nlohmann::json& data, const nlohmann::json& loader,
                                         const nlohmann::json& optimizer, const nlohmann::json& loop) {
  const nlohmann::json layers = {
      {"version", 2},
      {"nodes",
       {{{"id", "in"}, {"type", "Input"}, {"ports", {{{"id", "p"}, {"name", "x"}}}}},
        {{"id", "l1"}, {"type", "Linear"}, {"params", {{"in_features", in}, {"out_features", hidden}}}},
        {{"id", "a"}, {"type", "ReLU"}},
        {{"id", "l2"}, {"type", "Linear"}, {"params", {{"in_features", hidden}, {"out_features", out}}}},
        {{"id", "out"}, {"type", "Output"}, {"ports", {{{"id", "q"}, {"name", "y"}}}}}}},
      {"edges",
       {{{"id", "e1"}, {"source", "in"}, {"target", "l1"}, {"sourceHandle", "p"}},
        {{"id", "e2"}, {"source", "l1"}, {"target", "a"}},
        {{"id", "e3"}, {"source", "a"}, {"target", "l2"}},
        {{"id", "e4"}, {"source", "l2"}, {"target", "out"}, {"targetHandle", "q"}}}}};
  auto node = [](const char* id, const char* type, const nlohmann::json& params) {
    return nlohmann::json{{"id", id}, {"type", type}, {"data", {{"params", params}}}};
  };
  auto edge = [](const char* s, const char* sh, const char* t, const char* th) {
    return nlohmann::json{{"source", s}, {"sourceHandle", sh}, {"target", t}, {"targetHandle", th}, {"type", "data"}};
  };
  return {{"name", name},
          {"nodes",
           {node("start", "Start", nlohmann::json::object()), node("data", "ToyDataset", data),
            node("loader", "DataLoader", loader), node("mlp", "SequentialModel", {{"layers", layers.dump()}}),
            node("loss", "Loss", {{"type", "CrossEntropyLoss"}}), node("opt", "Optimizer", optimizer),
            node("train", "TrainingLoop", loop)}},
          {"edges",
           {{{"source", "start"}, {"sourceHandle", "trigger"}, {"target", "mlp"}, {"type", "trigger"}},
            edge("data", "dataset", "loader", "dataset"),
            edge("mlp", "model", "opt", "model"),
            edge("mlp", "model", "train", "model"),
            edge("loader", "dataloader", "train", "dataloader"),
            edge("opt", "optimizer", "train", "optimizer"),
            edge("loss", "loss_fn", "train", "loss_fn")}}};
}

/// A committed golden-value file from tests/golden/ (made by scripts/golden/make_golden.py).
inline nlohmann::json read_golden(const std::string& name) {
  return read_json_file(std::filesystem::path(CODEFY_SOURCE_DIR) / "tests/golden" / name);
}

}  // namespace codefy::testing
