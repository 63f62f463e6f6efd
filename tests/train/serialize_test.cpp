// Weight files: both formats round-trip, bad files fail naming the path, writes are atomic.
#include "train/serialize.h"
#include "weights_fixtures.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using codefy::testing::read_file;
using codefy::testing::TempDir;
using codefy::testing::write_file;
using namespace codefy::train;
using namespace codefy::train::weights_test;

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
