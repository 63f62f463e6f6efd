// Tests of state_dict handling and weight files (.pt pickles, .safetensors).
#include "train/serialize.h"

#include <caffe2/serialize/inline_container.h>
#include "../common/test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using codefy::testing::read_file;
using codefy::testing::write_file;
using codefy::testing::TempDir;
using namespace codefy::train;

namespace {




std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> keys_of(const StateDict& dict) {
  std::vector<std::string> keys;
  for (const auto& item : dict) keys.push_back(item.first);
  return keys;
}

/// Expects load_weights(path) to throw std::runtime_error naming the path.
void expect_load_error(const fs::path& path, const std::string& context) {
  try {
    load_weights(path);
    ADD_FAILURE() << "loaded without error: " << context;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << context << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << context << ": not a runtime_error: " << e.what();
  }
}

/// Tensors of every dtype the formats must carry, some of awkward layouts.
StateDict mixed_dict() {
  StateDict dict;
  dict.emplace_back("f32", torch::arange(6, torch::kFloat32).reshape({2, 3}).div(7));
  dict.emplace_back("f64", torch::tensor({1.0 / 3.0, -2.5e300}, torch::kFloat64));
  dict.emplace_back("i64", torch::tensor({int64_t{1} << 40, int64_t{-3}}, torch::kInt64));
  dict.emplace_back("bf16", torch::tensor({1.5f, -0.25f, 3.0f}).to(torch::kBFloat16));
  dict.emplace_back("f16", torch::tensor({0.5f, 65504.0f}).to(torch::kFloat16));
  dict.emplace_back("i32", torch::tensor({7, -8}, torch::kInt32));
  dict.emplace_back("u8", torch::tensor({0, 255}, torch::kInt32).to(torch::kUInt8));
  dict.emplace_back("bool", torch::tensor({true, false, true}));
  dict.emplace_back("scalar", torch::tensor(4.25));
  dict.emplace_back("empty", torch::zeros({0, 4}));
  dict.emplace_back("transposed", torch::arange(12, torch::kFloat32).reshape({3, 4}).t());
  dict.emplace_back("slice", torch::arange(100, torch::kFloat32).slice(0, 10, 13));
  auto grad = torch::ones({2}, torch::requires_grad());
  dict.emplace_back("needs.grad", grad * 2);
  return dict;
}

void expect_same(const StateDict& loaded, const StateDict& saved) {
  ASSERT_EQ(keys_of(loaded), keys_of(saved));
  for (size_t i = 0; i < saved.size(); ++i) {
    const auto& [name, expected] = saved[i];
    const at::Tensor& actual = loaded[i].second;
    EXPECT_EQ(actual.scalar_type(), expected.scalar_type()) << name;
    EXPECT_EQ(actual.sizes(), expected.sizes()) << name;
    EXPECT_TRUE(actual.is_contiguous()) << name;
    EXPECT_FALSE(actual.requires_grad()) << name;
    EXPECT_TRUE(torch::equal(actual, expected.detach())) << name;
  }
}

struct Net : torch::nn::Module {
  Net() {
    features = register_module("features", torch::nn::Sequential(torch::nn::Linear(2, 3), torch::nn::BatchNorm1d(3)));
    head = register_module("head", torch::nn::Linear(torch::nn::LinearOptions(3, 1).bias(false)));
    register_buffer("scale", torch::ones({1}));
  }
  torch::nn::Sequential features{nullptr};
  torch::nn::Linear head{nullptr};
};

}  // namespace

// --- state_dict -------------------------------------------------------------------

TEST(StateDict, PyTorchNamesAndOrder) {
  Net net;  // on the stack: must not need shared_from_this
  StateDict dict = state_dict(net);
  EXPECT_EQ(keys_of(dict), (std::vector<std::string>{"scale", "features.0.weight", "features.0.bias",
                                                      "features.1.weight", "features.1.bias",
                                                      "features.1.running_mean", "features.1.running_var",
                                                      "features.1.num_batches_tracked", "head.weight"}));
  // Detached aliases: no autograd, same storage as the parameters.
  EXPECT_FALSE(dict[1].second.requires_grad());
  EXPECT_EQ(dict[1].second.data_ptr(), net.features[0]->as<torch::nn::Linear>()->weight.data_ptr());
  EXPECT_EQ(dict[7].second.scalar_type(), torch::kInt64);
}

TEST(StateDict, LoadCopiesValues) {
  torch::manual_seed(0);
  Net a;
  Net b;
  ASSERT_FALSE(torch::equal(state_dict(a)[1].second, state_dict(b)[1].second));
  load_state_dict(b, state_dict(a));
  expect_same(state_dict(b), state_dict(a));
  // The parameters are still leaves that train.
  EXPECT_TRUE(b.head->weight.requires_grad());
  EXPECT_TRUE(b.head->weight.is_leaf());
}

TEST(StateDict, LoadReportsEveryProblemAndChangesNothing) {
  Net net;
  const at::Tensor before = net.head->weight.clone();
  StateDict dict = state_dict(net);
  dict.erase(dict.begin() + 2);                                     // features.0.bias missing
  dict.emplace_back("features.2.weight", torch::zeros({1}));        // unexpected
  dict.emplace_back("extra", torch::zeros({1}));                    // unexpected
  dict[0].second = torch::zeros({2, 2});                            // scale: shape mismatch
  for (auto& [name, t] : dict) {
    if (name == "head.weight") t = torch::full({1, 3}, 5.0f);      // valid, must not be copied
  }
  try {
    load_state_dict(net, dict);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    for (const char* part : {"missing", "features.0.bias", "unexpected", "features.2.weight", "extra", "shape",
                             "scale", "[2, 2]", "[1]"}) {
      EXPECT_NE(msg.find(part), std::string::npos) << part << " not in: " << msg;
    }
  }
  EXPECT_TRUE(torch::equal(net.head->weight, before));
}

// --- files --------------------------------------------------------------------------

TEST(Weights, RoundTripBothFormats) {
  TempDir tmp;
  const StateDict dict = mixed_dict();
  for (const char* name : {"model.pt", "model.pth", "weights.bin", "model.safetensors", "MODEL.SafeTensors"}) {
    const fs::path path = tmp.path() / name;
    save_weights(path, dict);
    expect_same(load_weights(path), dict);
  }
  // The extension picks the format; loading goes by content.
  EXPECT_EQ(read_file(tmp.path() / "model.pt").substr(0, 2), "PK");
  EXPECT_EQ(read_file(tmp.path() / "model.safetensors")[8], '{');
  fs::copy_file(tmp.path() / "model.safetensors", tmp.path() / "renamed.pt");
  expect_same(load_weights(tmp.path() / "renamed.pt"), dict);
  // The pickle holds only the bytes of the slice, not its 100-element storage.
  StateDict small = {{"slice", torch::arange(100000, torch::kFloat32).slice(0, 0, 2)}};
  save_weights(tmp.path() / "small.pt", small);
  EXPECT_LT(fs::file_size(tmp.path() / "small.pt"), 4000u);
  // An empty dict is a valid file in both formats.
  save_weights(tmp.path() / "empty.pt", {});
  save_weights(tmp.path() / "empty.safetensors", {});
  EXPECT_TRUE(load_weights(tmp.path() / "empty.pt").empty());
  EXPECT_TRUE(load_weights(tmp.path() / "empty.safetensors").empty());
  // Saving into a folder that does not exist yet creates it.
  save_weights(tmp.path() / "new" / "dir" / "m.safetensors", dict);
  expect_same(load_weights(tmp.path() / "new" / "dir" / "m.safetensors"), dict);
}

TEST(Weights, SafetensorsLayout) {
  StateDict dict = {{"b", torch::tensor({1.0f, 2.0f})}, {"a", torch::tensor({int64_t{3}})}};
  const std::string bytes = encode_safetensors(dict);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 8 + 8);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["b"]["dtype"], "F32");
  EXPECT_EQ(header["b"]["shape"], nlohmann::json::array({2}));
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json::array({0, 8}));
  EXPECT_EQ(header["a"]["dtype"], "I64");
  EXPECT_EQ(header["a"]["data_offsets"], nlohmann::json::array({8, 16}));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  float first;
  std::memcpy(&first, bytes.data() + 8 + n, 4);
  EXPECT_EQ(first, 1.0f);
  // The file order is kept on reading.
  EXPECT_EQ(keys_of(decode_safetensors(bytes, "mem")), (std::vector<std::string>{"b", "a"}));

  // A file written elsewhere: keys out of data order, no metadata, no padding.
  std::string json = R"({"z":{"dtype":"BF16","shape":[1],"data_offsets":[2,4]},"y":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  std::string foreign;
  for (int i = 0; i < 8; ++i) foreign.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xff));
  foreign += json;
  foreign += std::string("\x01\x02\x80\x3f", 4);  // u8 {1, 2}, bf16 1.0
  StateDict decoded = decode_safetensors(foreign, "foreign");
  ASSERT_EQ(keys_of(decoded), (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(decoded[1].second.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(decoded[1].second.to(torch::kFloat32).item<float>(), 1.0f);
  EXPECT_EQ(decoded[0].second[1].item<int64_t>(), 2);

  // Encoding refuses what it cannot store.
  EXPECT_ANY_THROW(encode_safetensors({{"c", torch::zeros({2}, torch::kComplexFloat)}}));
  EXPECT_ANY_THROW(encode_safetensors({{"u", at::Tensor()}}));
  EXPECT_ANY_THROW(encode_safetensors({{"d", torch::zeros({1})}, {"d", torch::zeros({1})}}));
}

TEST(Weights, BadFilesGiveRuntimeErrorsNamingThePath) {
  TempDir tmp;
  expect_load_error(tmp.path() / "missing.pt", "missing");
  expect_load_error(tmp.path(), "a folder");

  const StateDict dict = mixed_dict();
  for (const char* name : {"good.pt", "good.safetensors"}) {
    save_weights(tmp.path() / name, dict);
    const std::string bytes = read_file(tmp.path() / name);
    const fs::path cut = tmp.path() / (std::string("cut_") + name);
    // Every prefix of the file (every 7th for speed) must fail cleanly.
    for (size_t len = 0; len < bytes.size(); len += (len < 64 ? 1 : 7)) {
      write_file(cut, bytes.substr(0, len));
      expect_load_error(cut, std::string(name) + " truncated to " + std::to_string(len));
    }
  }

  const fs::path garbage = tmp.path() / "garbage.pt";
  std::string noise(3000, '\0');
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>((i * 2654435761u) >> 13);
  write_file(garbage, noise);
  expect_load_error(garbage, "noise");
  write_file(garbage, "hello, I am a text file\n");
  expect_load_error(garbage, "text");
  write_file(garbage, "PK\x03\x04" + noise);
  expect_load_error(garbage, "zip magic then noise");
  write_file(garbage, std::string("\x0d\0\0\0\0\0\0\0{\"a\":1}      ", 21));
  expect_load_error(garbage, "safetensors with a bad entry");
  write_file(garbage, std::string("\xff\xff\xff\xff\0\0\0\0{", 9));
  expect_load_error(garbage, "safetensors with a huge header length");
  write_file(garbage, std::string("\x80\x02\x8a\x0a", 4) + noise);
  expect_load_error(garbage, "legacy pickle");

  // Corrupt bytes inside a valid zip.
  std::string pt = read_file(tmp.path() / "good.pt");
  for (size_t pos = 30; pos < pt.size(); pos += 97) {
    std::string bad = pt;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x5a);
    write_file(garbage, bad);
    try {
      load_weights(garbage);  // a flipped byte in tensor data loads: fine
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(garbage.string()), std::string::npos) << e.what();
    }
  }

  // Valid pickles that are not a dict of tensors.
  auto write_pickle = [&](const c10::IValue& value) {
    std::vector<char> bytes = torch::pickle_save(value);
    write_file(garbage, std::string(bytes.begin(), bytes.end()));
  };
  write_pickle(c10::IValue(torch::ones({2})));
  expect_load_error(garbage, "a bare tensor");
  c10::impl::GenericDict checkpoint(c10::StringType::get(), c10::AnyType::get());
  checkpoint.insert(c10::IValue("weight"), c10::IValue(torch::ones({2})));
  checkpoint.insert(c10::IValue("epoch"), c10::IValue(int64_t{3}));
  write_pickle(c10::IValue(checkpoint));
  expect_load_error(garbage, "a dict with an int");
  c10::Dict<int64_t, at::Tensor> int_keys;
  int_keys.insert(1, torch::ones({1}));
  write_pickle(c10::IValue(int_keys));
  expect_load_error(garbage, "int keys");
}

TEST(Weights, AtomicWriteLeavesNoTempFiles) {
  TempDir tmp;
  const fs::path path = tmp.path() / "model.pt";
  save_weights(path, mixed_dict());
  save_weights(path, {{"w", torch::ones({3})}});  // overwrite
  EXPECT_EQ(names_in(tmp.path()), std::vector<std::string>{"model.pt"});
  EXPECT_EQ(load_weights(path).size(), 1u);
}

TEST(Weights, FailedWriteKeepsOldFile) {
  TempDir tmp;
  const fs::path path = tmp.path() / "model.safetensors";
  save_weights(path, {{"w", torch::ones({3})}});
  const std::string old_bytes = read_file(path);

  // 1. Nothing to write: an undefined tensor.
  EXPECT_ANY_THROW(save_weights(path, {{"w", at::Tensor()}}));
  EXPECT_ANY_THROW(save_weights(tmp.path() / "model.pt", {{"w", at::Tensor()}}));
  EXPECT_EQ(read_file(path), old_bytes);
  EXPECT_EQ(names_in(tmp.path()), std::vector<std::string>{"model.safetensors"});

  // 2. The disk fills up mid-write (a file size limit; works as root too).
  {
    struct rlimit old_limit;
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old_limit), 0);
    auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
    struct rlimit small = old_limit;
    small.rlim_cur = 4096;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    std::string error;
    try {
      save_weights(path, {{"big", torch::zeros({100000})}});
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &old_limit);
    std::signal(SIGXFSZ, old_handler);
    EXPECT_NE(error.find(path.string()), std::string::npos) << error;
  }
  EXPECT_EQ(read_file(path), old_bytes);
  EXPECT_EQ(names_in(tmp.path()), std::vector<std::string>{"model.safetensors"});

  // 3. The rename fails: the target is a non-empty folder.
  const fs::path folder = tmp.path() / "taken.pt";
  fs::create_directories(folder / "inside");
  EXPECT_THROW(save_weights(folder, {{"w", torch::ones({3})}}), std::runtime_error);
  EXPECT_TRUE(fs::is_directory(folder / "inside"));
  EXPECT_EQ(names_in(tmp.path()), (std::vector<std::string>{"model.safetensors", "taken.pt"}));

  // 4. A read-only folder (meaningless for root, who may write anyway).
  fs::permissions(tmp.path(), fs::perms::owner_read | fs::perms::owner_exec);
  if (::access(tmp.path().c_str(), W_OK) != 0) {
    EXPECT_THROW(save_weights(path, {{"w", torch::zeros({3})}}), std::runtime_error);
    EXPECT_EQ(read_file(path), old_bytes);
  }
  fs::permissions(tmp.path(), fs::perms::owner_all);
  EXPECT_EQ(names_in(tmp.path()), (std::vector<std::string>{"model.safetensors", "taken.pt"}));
}

// --- interoperability with Python ----------------------------------------------------

// Fixtures written by Python's torch.save (commands in tests/fixtures/README.md).
TEST(Weights, LoadsPythonTorchSave) {
  const fs::path fixtures = fs::path(CODEFY_SOURCE_DIR) / "tests" / "fixtures";
  StateDict dict = load_weights(fixtures / "python_dict.pt");
  ASSERT_EQ(keys_of(dict), std::vector<std::string>{"w"});
  EXPECT_EQ(dict[0].second.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(dict[0].second, torch::arange(6, torch::kFloat32).reshape({2, 3})));

  // A real Module.state_dict() (an OrderedDict with _metadata) into a C++ Linear.
  StateDict linear = load_weights(fixtures / "python_linear_state_dict.pt");
  ASSERT_EQ(keys_of(linear), (std::vector<std::string>{"weight", "bias"}));
  torch::nn::Linear layer(3, 2);
  load_state_dict(*layer, linear);
  EXPECT_NEAR(layer->weight[0][1].item<float>(), 0.3097f, 1e-4);
  EXPECT_NEAR(layer->bias[1].item<float>(), 0.4578f, 1e-4);
}

// Every single-byte corruption of the pickle inside a valid zip (so the zip's
// CRC does not catch it) must load or fail with a runtime_error, never crash.
TEST(Weights, CorruptPicklesNeverCrash) {
  TempDir tmp;
  const std::string original = read_file(fs::path(CODEFY_SOURCE_DIR) / "tests/fixtures/python_linear_state_dict.pt");
  std::istringstream in(original);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  auto [pkl_data, pkl_size] = reader.getRecord("data.pkl");
  const std::string pkl(static_cast<const char*>(pkl_data.get()), pkl_size);
  const fs::path path = tmp.path() / "fuzz.pt";
  int loaded = 0;
  for (size_t pos = 0; pos < pkl.size(); ++pos) {
    for (int delta : {1, 0x80}) {
      std::string mutated = pkl;
      mutated[pos] = static_cast<char>(mutated[pos] + delta);
      std::string zip;
      caffe2::serialize::PyTorchStreamWriter writer([&zip](const void* buf, size_t size) {
        zip.append(static_cast<const char*>(buf), size);
        return size;
      });
      for (const std::string& name : reader.getAllRecords()) {
        if (name == "version") continue;
        if (name == "data.pkl") {
          writer.writeRecord(name, mutated.data(), mutated.size());
        } else {
          auto [data, size] = reader.getRecord(name);
          writer.writeRecord(name, data.get(), size);
        }
      }
      writer.writeEndOfFile();
      write_file(path, zip);
      try {
        load_weights(path);
        ++loaded;
      } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
      } catch (...) {
        ADD_FAILURE() << "not a runtime_error at byte " << pos;
      }
    }
  }
  EXPECT_GT(loaded, 0);  // some bytes (e.g. within names) are harmless
}

TEST(Weights, CorruptSafetensorsNeverCrash) {
  TempDir tmp;
  const std::string original = encode_safetensors(mixed_dict());
  const fs::path path = tmp.path() / "fuzz.safetensors";
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(original[i])} << (8 * i);
  for (size_t pos = 0; pos < 8 + n; ++pos) {
    std::string mutated = original;
    mutated[pos] = static_cast<char>(mutated[pos] ^ 0x11);
    write_file(path, mutated);
    try {
      load_weights(path);
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    } catch (...) {
      ADD_FAILURE() << "not a runtime_error at byte " << pos;
    }
  }
  // A bool that is neither 0 nor 1 is refused (reading it would be undefined).
  std::string bad_bool = encode_safetensors({{"b", torch::tensor({true, false})}});
  bad_bool[bad_bool.size() - 1] = 7;
  write_file(path, bad_bool);
  expect_load_error(path, "bool byte 7");
}
