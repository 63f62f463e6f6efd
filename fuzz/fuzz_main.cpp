// codefy_fuzz's entry points: picks the target by the program's name.
#include "fuzz/fuzz_targets.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace codefy::fuzz {

namespace {

struct Target {
  const char* name;
  void (*run)(std::string_view);
};

constexpr Target kTargets[] = {
    {"graph", graph},         {"layers", layers}, {"pickle", pickle},         {"safetensors", safetensors},
    {"multipart", multipart}, {"csv", csv},       {"ws_execute", ws_execute},
};

void (*chosen)(std::string_view) = nullptr;

}  // namespace

void fail(const std::string& what) {
  std::fprintf(stderr, "codefy fuzz: property failed: %s\n", what.c_str());
  std::abort();
}

const std::string& file_with(std::string_view data) {
  static const int fd = memfd_create("codefy-fuzz", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  check(fd >= 0, "memfd_create failed");
  check(ftruncate(fd, 0) == 0, "ftruncate failed");
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(done));
    check(n > 0, "pwrite failed");
    done += static_cast<size_t>(n);
  }
  return path;
}

}  // namespace codefy::fuzz

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  // fuzz_<target> (the links scripts/fuzz.sh runs), or CODEFY_FUZZ_TARGET.
  std::string name = (*argv)[0];
  name = name.substr(name.find_last_of('/') + 1);
  if (name.rfind("fuzz_", 0) == 0) name = name.substr(5);
  if (const char* env = std::getenv("CODEFY_FUZZ_TARGET")) name = env;
  for (const auto& t : codefy::fuzz::kTargets)
    if (name == t.name) codefy::fuzz::chosen = t.run;
  if (!codefy::fuzz::chosen) {
    std::fprintf(stderr, "codefy_fuzz: no target '%s'; run it as fuzz_<target> or set CODEFY_FUZZ_TARGET to one of:",
                 name.c_str());
    for (const auto& t : codefy::fuzz::kTargets) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, "\n");
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  codefy::fuzz::chosen(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
