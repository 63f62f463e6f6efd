// The device catalogue (R-DEV-1, R-DEV-2) and the device-string parser
// (R-DEV-4, R-DEV-5) against fake machines with 0, 1, 2 and 3 cards.
#include "device/catalogue.h"

#include <gtest/gtest.h>
#include <torch/version.h>

namespace codefy::device {
namespace {

constexpr uint64_t GiB = 1ULL << 30;

class FakeProbe : public DeviceProbe {
 public:
  bool built = true;
  int current = 0;
  bool mps = false;
  std::vector<CudaCard> cards;
  HostMemory host{12 * GiB, 31 * GiB};

  static FakeProbe with_cards(int n, int current_index = 0) {
    FakeProbe p;
    p.current = current_index;
    for (int i = 0; i < n; ++i) p.cards.push_back({i, "NVIDIA H100 80GB HBM3", (10 + i) * GiB, 80 * GiB, 9, 0});
    return p;
  }
  bool cuda_built() const override { return built; }
  int cuda_count() const override { return static_cast<int>(cards.size()); }
  int cuda_current() const override { return current; }
  CudaCard cuda_card(int index) const override { return cards.at(static_cast<size_t>(index)); }
  bool mps_available() const override { return mps; }
  HostMemory host_memory() const override { return host; }
};

const DeviceSource kSource{"lesson", "n7", "TrainingLoop", "device"};
const char* kWhere = "graph \"lesson\", node n7 (TrainingLoop), parameter device";

struct Case {
  const char* request;
  int cards;
  int current;
  const char* expected;  // resolved device
  const char* warning;   // substring of the only warning; nullptr = no warning
};

// Ordinary strings, missing indexes (R-DEV-4), and no CUDA at all.
const Case kCases[] = {
    {"auto", 0, 0, "cpu", nullptr},
    {"auto", 1, 0, "cuda:0", nullptr},
    {"auto", 2, 1, "cuda:1", nullptr},
    {"", 2, 1, "cuda:1", nullptr},
    {"cpu", 0, 0, "cpu", nullptr},
    {"cpu", 3, 2, "cpu", nullptr},
    {"cuda", 1, 0, "cuda:0", nullptr},
    {"cuda", 3, 2, "cuda:2", nullptr},
    {"cuda:0", 1, 0, "cuda:0", nullptr},
    {"cuda:1", 2, 0, "cuda:1", nullptr},
    {"cuda:2", 3, 0, "cuda:2", nullptr},
    {"cuda:1", 1, 0, "cuda:0", "this machine has 1 CUDA card (cuda:0); using cuda:0, the current CUDA device"},
    {"cuda:3", 2, 0, "cuda:0", "this machine has 2 CUDA cards (cuda:0, cuda:1); using cuda:0, the current CUDA device"},
    {"cuda:3", 2, 1, "cuda:1", "this machine has 2 CUDA cards (cuda:0, cuda:1); using cuda:1, the current CUDA device"},
    {"cuda:7", 3, 0, "cuda:0", "this machine has 3 CUDA cards (cuda:0 to cuda:2); using cuda:0"},
    {"cuda:99999999999999", 2, 0, "cuda:0", "is not a device string"},  // too long to be an index
    {"cuda", 0, 0, "cpu", "asks for CUDA, but no CUDA card is visible to this process; running on CPU"},
    {"cuda:0", 0, 0, "cpu", "asks for CUDA, but no CUDA card is visible to this process; running on CPU"},
    {"mps", 0, 0, "cpu", "MPS is not available here and there is no GPU; running on CPU"},
    {"mps", 2, 1, "cuda:1", "MPS is not available here; using cuda:1, the current CUDA device"},
};

class ResolveDevice : public ::testing::TestWithParam<Case> {};

TEST_P(ResolveDevice, ResolvesAndWarnsAsTheSpecSays) {
  const Case& c = GetParam();
  const FakeProbe probe = FakeProbe::with_cards(c.cards, c.current);
  const DeviceChoice got = resolve_device(c.request, probe, kSource);
  EXPECT_EQ(got.device.str(), c.expected) << "request \"" << c.request << "\" with " << c.cards << " cards";
  if (!c.warning) {
    EXPECT_TRUE(got.warnings.empty()) << got.warnings.front();
  } else {
    ASSERT_EQ(got.warnings.size(), 1u);
    EXPECT_NE(got.warnings[0].find(c.warning), std::string::npos) << got.warnings[0];
    EXPECT_NE(got.warnings[0].find(std::string("device \"") + c.request + "\" (" + kWhere + ")"), std::string::npos)
        << got.warnings[0];
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ResolveDevice, ::testing::ValuesIn(kCases));

// R-DEV-5: strings outside the grammar never reach LibTorch; they take the
// current CUDA device (here cuda:1 of 2, so it is not just index 0) with a
// warning naming graph, node and parameter.
TEST(ResolveDevice, UnaddressableStringsFallBackToTheCurrentCard) {
  const FakeProbe two = FakeProbe::with_cards(2, 1);
  for (const char* s : {"cuda:", "cuda:abc", "${CUDA_INDEX}", "cuda:0:1", "cuda: 0", "CUDA:0", "Cuda", "CPU", " cpu",
                        "cuda:0 ", "gpu", "cuda:-1", "cuda:+1", "cuda:1.0", "cuda0"}) {
    const DeviceChoice got = resolve_device(s, two, kSource);
    EXPECT_EQ(got.device.str(), "cuda:1") << s;
    ASSERT_EQ(got.warnings.size(), 1u) << s;
    const std::string& w = got.warnings[0];
    EXPECT_NE(w.find(std::string("device \"") + s + "\" (" + kWhere + ") is not a device string"), std::string::npos)
        << w;
    EXPECT_NE(w.find("using cuda:1, the current CUDA device (this machine has 2 CUDA cards (cuda:0, cuda:1))"),
              std::string::npos)
        << w;
  }
  for (int cards : {1, 3}) {
    const DeviceChoice got = resolve_device("${CUDA_INDEX}", FakeProbe::with_cards(cards), kSource);
    EXPECT_EQ(got.device.str(), "cuda:0");
    EXPECT_NE(got.warnings.at(0).find(std::to_string(cards) + " CUDA card"), std::string::npos) << got.warnings[0];
  }
}

TEST(ResolveDevice, WithoutAnyCudaTheAnswerIsCpuAndTheWarningSaysWhy) {
  FakeProbe cpu_build;
  cpu_build.built = false;
  const DeviceChoice bad = resolve_device("cuda:abc", cpu_build, kSource);
  EXPECT_EQ(bad.device.str(), "cpu");
  EXPECT_NE(bad.warnings.at(0).find("is not a device string"), std::string::npos);
  EXPECT_NE(bad.warnings[0].find("this LibTorch (" TORCH_VERSION ") is built without CUDA, so running on CPU"),
            std::string::npos)
      << bad.warnings[0];
  const DeviceChoice cuda = resolve_device("cuda:1", cpu_build, kSource);
  EXPECT_EQ(cuda.device.str(), "cpu");
  EXPECT_NE(cuda.warnings.at(0).find("is built without CUDA; running on CPU"), std::string::npos) << cuda.warnings[0];
}

TEST(ResolveDevice, CommandLineSourceIsNamedAsAnOption) {
  const DeviceChoice got = resolve_device("cuda:5", FakeProbe::with_cards(2), DeviceSource{"g", "", "", "--device"});
  EXPECT_NE(got.warnings.at(0).find("device \"cuda:5\" (graph \"g\", option --device)"), std::string::npos)
      << got.warnings[0];
}

TEST(ResolveDevice, MpsWhereAvailable) {
  FakeProbe mac;
  mac.mps = true;
  EXPECT_EQ(resolve_device("mps", mac).device.str(), "mps");
  EXPECT_EQ(resolve_device("auto", mac).device.str(), "mps");
  EXPECT_TRUE(resolve_device("mps", mac).warnings.empty());
}

std::vector<std::string> labels(const std::vector<DeviceEntry>& entries) {
  std::vector<std::string> v;
  for (const auto& e : entries) v.push_back(e.label);
  return v;
}

std::vector<std::string> cpu_precisions() {
#if TORCH_VERSION_MAJOR >= 2
  return {"fp32", "bf16", "fp16"};
#else
  return {"fp32", "bf16"};
#endif
}

TEST(Catalogue, NoCardsListsOnlyTheCpuWithItsMemory) {
  const auto c = device_catalogue(FakeProbe::with_cards(0));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].device, "cpu");
  EXPECT_EQ(c[0].label, "CPU");
  EXPECT_EQ(c[0].free_bytes, 12 * GiB);
  EXPECT_EQ(c[0].total_bytes, 31 * GiB);
  EXPECT_EQ(c[0].precisions, cpu_precisions());
}

TEST(Catalogue, OneCardIsTheCurrentDeviceOnly) {
  const auto c = device_catalogue(FakeProbe::with_cards(1));
  EXPECT_EQ(labels(c), (std::vector<std::string>{"CPU", "NVIDIA CUDA · 10.0/80.0 GiB"}));
  EXPECT_EQ(c[1].device, "cuda");
  EXPECT_EQ(c[1].precisions, (std::vector<std::string>{"fp32", "bf16", "fp16"}));
}

TEST(Catalogue, TwoOrMoreCardsAddOneEntryEachAfterTheCurrentOne) {
  const auto c = device_catalogue(FakeProbe::with_cards(3, 1));
  EXPECT_EQ(labels(c), (std::vector<std::string>{
                           "CPU",
                           "NVIDIA CUDA · 11.0/80.0 GiB",  // the current device, cuda:1
                           "NVIDIA CUDA #0 · cuda:0 · NVIDIA H100 80GB HBM3 · 10.0/80.0 GiB",
                           "NVIDIA CUDA #1 · cuda:1 · NVIDIA H100 80GB HBM3 · 11.0/80.0 GiB",
                           "NVIDIA CUDA #2 · cuda:2 · NVIDIA H100 80GB HBM3 · 12.0/80.0 GiB",
                       }));
  EXPECT_EQ(c[1].device, "cuda");
  EXPECT_EQ(c[4].device, "cuda:2");
  const auto j = to_json(c);
  EXPECT_EQ(j[2]["free_bytes"], 10 * GiB);
  EXPECT_EQ(j[2]["name"], "NVIDIA H100 80GB HBM3");
}

TEST(Catalogue, UnreadableMemoryIsOmittedNotRefused) {
  FakeProbe p = FakeProbe::with_cards(2);
  p.cards[0] = {0, "Tesla T4", std::nullopt, std::nullopt, 7, 5};
  p.cards[1].free_bytes.reset();  // total known, free not: no "free/total" to show
  p.host = {};
  const auto c = device_catalogue(p);
  EXPECT_EQ(labels(c), (std::vector<std::string>{"CPU", "NVIDIA CUDA", "NVIDIA CUDA #0 · cuda:0 · Tesla T4",
                                                 "NVIDIA CUDA #1 · cuda:1 · NVIDIA H100 80GB HBM3"}));
  EXPECT_EQ(c[2].precisions, (std::vector<std::string>{"fp32", "fp16"}));  // capability 7.5: no bf16
  const auto j = to_json(c);
  EXPECT_TRUE(j[0]["free_bytes"].is_null());
  EXPECT_TRUE(j[2]["total_bytes"].is_null());
  EXPECT_EQ(j[3]["total_bytes"], 80 * GiB);
}

TEST(Catalogue, ThisMachineStartsWithTheCpu) {
  const auto c = device_catalogue(system_probe());
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].device, "cpu");
  ASSERT_TRUE(c[0].total_bytes.has_value());
  EXPECT_GT(*c[0].total_bytes, 0u);
}

TEST(Meminfo, ParsesTotalAndAvailable) {
  const HostMemory m = parse_meminfo("MemTotal:       32768000 kB\nMemFree:  100 kB\nMemAvailable:   16384000 kB\n");
  EXPECT_EQ(m.total_bytes, 32768000ULL * 1024);
  EXPECT_EQ(m.available_bytes, 16384000ULL * 1024);
  EXPECT_FALSE(parse_meminfo("garbage").total_bytes.has_value());
}

}  // namespace
}  // namespace codefy::device

namespace codefy::device {
namespace {

TEST(FakeCards, ParsesNamesAndMemoryForTheEditorsTests) {
  const auto cards = parse_fake_cards("NVIDIA A100-SXM4-80GB:81920:61440;NVIDIA GeForce RTX 4090:24564:20000");
  ASSERT_EQ(cards.size(), 2u);
  EXPECT_EQ(cards[1].index, 1);
  EXPECT_EQ(cards[1].name, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(cards[0].total_bytes, uint64_t{81920} << 20);
  EXPECT_EQ(cards[0].free_bytes, uint64_t{61440} << 20);
  EXPECT_TRUE(parse_fake_cards("").empty());
  for (const char* bad : {"A100:80", "A100:x:1", ":10:5", "A100:10:20", "A100:-1:0"})
    EXPECT_THROW(parse_fake_cards(bad), std::invalid_argument) << bad;
}

}  // namespace
}  // namespace codefy::device
