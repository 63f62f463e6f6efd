// Reading Python's torch.save files: real fixtures, and corrupt pickles that fail cleanly.
#include "train/pickle_reader.h"
#include "weights_fixtures.h"

#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using codefy::testing::read_file;
using codefy::testing::TempDir;
using codefy::testing::write_file;
using namespace codefy::train;
using namespace codefy::train::weights_test;

// Fixtures written by Python's torch.save (commands in tests/fixtures/README.md).
TEST(PickleReader, LoadsPythonTorchSave) {
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
TEST(PickleReader, CorruptPicklesNeverCrash) {
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

TEST(PickleReader, ReadsZipBytesAndNamesTheSourceOnForeignContent) {
  const std::string bytes = read_file(fs::path(CODEFY_SOURCE_DIR) / "tests/fixtures/python_linear_state_dict.pt");
  EXPECT_EQ(keys_of(read_torch_zip(bytes, "mem")), (std::vector<std::string>{"weight", "bias"}));
  const std::vector<char> list = torch::pickle_save(c10::IValue(c10::List<int64_t>({1, 2})));
  try {
    read_torch_zip(std::string(list.begin(), list.end()), "a list");
    FAIL() << "read a list as a state_dict";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "weights file a list does not hold a dict of tensors (it holds a list)");
  }
}
