#include "device/runtime.h"

#include "device/catalogue.h"
#include "util/parse.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace codefy::device {

bool tune_allocator() {
  if (const char* env = std::getenv("CODEFY_MALLOC_TUNING"); env && std::string(env) == "0") return false;
  // 32 MiB is glibc's largest mmap threshold on 64-bit; trim and top pad keep
  // freed memory in the heap for the next batch instead of returning it.
  bool ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  ok = mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1 && ok;
  ok = mallopt(M_TOP_PAD, 64 << 20) == 1 && ok;
  return ok;
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

int configure_threads(int requested) {
  int n = requested;
  if (n <= 0) {
    if (const char* env = std::getenv("CODEFY_NUM_THREADS")) n = std::atoi(env);
  }
  if (n <= 0) n = usable_cpus();
  at::set_num_threads(n);
  return n;
}

namespace {

bool lower_this_thread(const ComputePriority& priority) {
  const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
  const sched_param param{};
  if (priority.kind == ComputePriority::Kind::kIdle) return sched_setscheduler(tid, SCHED_IDLE, &param) == 0;
  if (priority.niceness <= 0) return true;
  // SCHED_BATCH: no wake-up preemption by the compute thread; the nice value
  // shares the CPU under load.
  const bool batch = sched_setscheduler(tid, SCHED_BATCH, &param) == 0;
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  if (errno != 0) return false;
  return batch &&
         (now >= priority.niceness || setpriority(PRIO_PROCESS, static_cast<id_t>(tid), priority.niceness) == 0);
}

}  // namespace

std::optional<ComputePriority> ComputePriority::parse(std::string_view text) {
  if (text == "auto") return ComputePriority{};
  if (text == "idle") return ComputePriority{ComputePriority::Kind::kIdle};
  const auto n = util::parse_int(text);
  if (!n || *n < 0 || *n > 19) return std::nullopt;
  return ComputePriority{ComputePriority::Kind::kNice, static_cast<int>(*n)};
}

ComputePriority ComputePriority::for_run(bool on_cpu) const {
  if (kind != Kind::kAuto) return *this;
  return on_cpu ? ComputePriority{Kind::kIdle} : ComputePriority{Kind::kNice, 10};
}

bool lower_compute_priority(const ComputePriority& asked) {
  const ComputePriority priority = asked.for_run(/*on_cpu=*/true);
  std::atomic<bool> ok{lower_this_thread(priority)};
  // One chunk per intra-op thread: with grain 1 and as many items as
  // threads, each thread of the pool takes exactly one.
  const int64_t threads = at::get_num_threads();
  at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      if (!lower_this_thread(priority)) ok = false;
  });
  return ok;
}

namespace {

int collect_library(struct dl_phdr_info* info, size_t, void* data) {
  auto* paths = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name && *info->dlpi_name) paths->push_back(info->dlpi_name);
  return 0;
}

}  // namespace

BlasInfo blas_info() {
  std::vector<std::string> loaded;
  dl_iterate_phdr(collect_library, &loaded);
  BlasInfo info;
  info.name = "unknown";
  for (const auto& p : loaded) {
    const std::string file = std::filesystem::path(p).filename().string();
    if (file.rfind("libblas.so", 0) != 0 && file.rfind("libopenblas", 0) != 0 && file.rfind("libmkl_rt", 0) != 0 &&
        file.rfind("libblis", 0) != 0)
      continue;
    std::error_code ec;
    auto real = std::filesystem::canonical(p, ec);
    info.path = ec ? p : real.string();
    break;
  }
  // OpenBLAS announces itself through a symbol, whatever the file is called.
  using ConfigFn = char* (*)();
  if (auto fn = reinterpret_cast<ConfigFn>(dlsym(RTLD_DEFAULT, "openblas_get_config"))) {
    info.name = "OpenBLAS";
    info.config = fn();
  } else if (info.path.find("mkl") != std::string::npos) {
    info.name = "MKL";
  } else if (info.path.find("blis") != std::string::npos) {
    info.name = "BLIS";
  } else if (info.path.find("/blas/") != std::string::npos || info.path.find("libblas.so") != std::string::npos) {
    info.name = "reference BLAS";
    info.is_reference = true;
  }
  return info;
}

nlohmann::json runtime_report() {
  nlohmann::json r;
  r["libtorch"] = TORCH_VERSION;
  r["threads"] = at::get_num_threads();
  r["usable_cpus"] = usable_cpus();
  const BlasInfo b = blas_info();
  r["blas"] = {{"name", b.name}, {"path", b.path}, {"config", b.config}};
  r["devices"] = to_json(device_catalogue(system_probe()));
  nlohmann::json warnings = nlohmann::json::array();
  if (b.is_reference)
    warnings.push_back("matrix products run on the reference BLAS (" + b.path +
                       "), about 27x slower than OpenBLAS: run scripts/setup.sh, or "
                       "`update-alternatives --config libblas.so.3-x86_64-linux-gnu`");
  if (at::get_num_threads() < usable_cpus())
    warnings.push_back("LibTorch uses " + std::to_string(at::get_num_threads()) + " of " +
                       std::to_string(usable_cpus()) + " usable CPUs");
  r["warnings"] = warnings;
  return r;
}

}  // namespace codefy::device
