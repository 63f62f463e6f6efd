// The counting CPU allocator: live, peak and allocation counts, views counted
// once, the raw interface oneDNN uses, and the budget that refuses
// allocations as a full GPU would (R-OOM on a CPU-only machine).
#include "device/memory.h"

#include <c10/core/CPUAllocator.h>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace codefy::device {
namespace {

class CountingAllocator : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(install_counting_allocator()); }
  void TearDown() override { set_cpu_budget(0); }
};

// #28: out of memory is decided by type in one place. LibTorch's own CPU
// allocator says "can't allocate memory" as a plain c10::Error; through the
// counting allocator it arrives as c10::OutOfMemoryError, and nothing stays
// counted.
TEST_F(CountingAllocator, TheCpuAllocatorsOwnFailureIsTypedOutOfMemory) {
  const int64_t live = cpu_memory().live_bytes;
  try {
    torch::Tensor huge = torch::empty({int64_t{1} << 58}, torch::kUInt8);  // 256 PiB: the system refuses it
    FAIL() << "256 PiB were allocated";
  } catch (const c10::OutOfMemoryError& e) {
    EXPECT_TRUE(is_out_of_memory(e));
    EXPECT_NE(std::string(e.what()).find("can't allocate memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cpu_memory().live_bytes, live);
  EXPECT_TRUE(is_out_of_memory(std::bad_alloc()));
  EXPECT_FALSE(is_out_of_memory(std::runtime_error("CUDA out of memory")));  // text decides nothing
}

TEST_F(CountingAllocator, CountsLiveAndPeakBytes) {
  const CpuMemoryStats before = cpu_memory();
  EXPECT_TRUE(before.installed);
  reset_cpu_peak();
  {
    torch::Tensor a = torch::empty({1024, 256});         // 1 MiB
    torch::Tensor view = a.narrow(0, 0, 10).view({-1});  // shares a's storage: nothing new
    EXPECT_EQ(cpu_memory().live_bytes - before.live_bytes, 1 << 20);
    EXPECT_GE(cpu_memory().allocations, before.allocations + 1);
    {
      torch::Tensor b = torch::empty({512, 256});
      EXPECT_EQ(cpu_memory().live_bytes - before.live_bytes, (1 << 20) + (1 << 19));
    }
    EXPECT_EQ(cpu_memory().live_bytes - before.live_bytes, 1 << 20);
    EXPECT_GE(cpu_memory().peak_bytes - before.live_bytes, (1 << 20) + (1 << 19));
  }
  EXPECT_EQ(cpu_memory().live_bytes, before.live_bytes);
  reset_cpu_peak();
  EXPECT_EQ(cpu_memory().peak_bytes, before.live_bytes);
}

TEST_F(CountingAllocator, KernelsThatUseTheRawInterfaceWork) {
  // Convolution goes through oneDNN, which allocates with raw_allocate().
  const int64_t before = cpu_memory().live_bytes;
  {
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 8, 3).padding(1));
    torch::Tensor y = conv->forward(torch::randn({4, 3, 16, 16}));
    y.sum().backward();
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{4, 8, 16, 16}));
    void* raw = c10::GetCPUAllocator()->raw_allocate(1000);
    EXPECT_GE(cpu_memory().live_bytes - before, 1000);
    c10::GetCPUAllocator()->raw_deallocate(raw);
  }
  EXPECT_EQ(cpu_memory().live_bytes, before);
}

TEST_F(CountingAllocator, BudgetRefusesLikeAFullDevice) {
  const int64_t base = cpu_memory().live_bytes;
  set_cpu_budget(base + (4 << 20));
  torch::Tensor fits = torch::empty({1 << 20});  // 4 MiB: exactly at the budget
  try {
    torch::Tensor more = torch::empty({16});
    FAIL() << "allocation past the budget succeeded";
  } catch (const c10::OutOfMemoryError& e) {
    const std::string m = e.what_without_backtrace();
    EXPECT_NE(m.find("CPU memory budget exceeded: tried to allocate 64 B with"), std::string::npos) << m;
    EXPECT_NE(m.find(" budget"), std::string::npos) << m;
  }
  EXPECT_EQ(cpu_memory().live_at_failure_bytes, base + (4 << 20));
  EXPECT_EQ(cpu_memory().live_bytes, base + (4 << 20));  // the refused bytes are not counted
  fits = torch::Tensor();
  torch::Tensor now_fits = torch::empty({16});  // freed memory is available again
  set_cpu_budget(0);
  torch::Tensor unlimited = torch::empty({2 << 20});
  EXPECT_EQ(read_memory(c10::Device(c10::kCPU)).counted, true);
}

TEST_F(CountingAllocator, ReadingReportsTheBudgetAsTheTotal) {
  set_cpu_budget(123 << 20);
  const MemoryReading r = read_memory(c10::Device(c10::kCPU));
  EXPECT_TRUE(r.counted);
  EXPECT_EQ(r.total_bytes, int64_t{123} << 20);
  set_cpu_budget(0);
  EXPECT_FALSE(read_memory(c10::Device(c10::kCPU)).total_bytes.has_value());
  release_cached_memory(c10::Device(c10::kCPU));  // must be safe to call at any time
}

TEST(MemoryBudget, FromTheEnvironment) {
  unsetenv("CODEFYUI_CPU_MEMORY_BUDGET_MB");
  EXPECT_EQ(cpu_budget_from_env(), 0);
  setenv("CODEFYUI_CPU_MEMORY_BUDGET_MB", "512", 1);
  EXPECT_EQ(cpu_budget_from_env(), int64_t{512} << 20);
  setenv("CODEFYUI_CPU_MEMORY_BUDGET_MB", "lots", 1);
  EXPECT_THROW(cpu_budget_from_env(), std::invalid_argument);
  setenv("CODEFYUI_CPU_MEMORY_BUDGET_MB", "-5", 1);
  EXPECT_THROW(cpu_budget_from_env(), std::invalid_argument);
  unsetenv("CODEFYUI_CPU_MEMORY_BUDGET_MB");
}

TEST(FormatBytes, PicksTheUnit) {
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(512LL << 20), "512.0 MiB");
  EXPECT_EQ(format_bytes(static_cast<int64_t>(14.82 * (1LL << 30))), "14.82 GiB");
}

}  // namespace
}  // namespace codefy::device
