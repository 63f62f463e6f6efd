#include "store/sizing.h"
#include "store/lru.h"
#include "util/parse.h"

#include <torch/nn/module.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace codefy::store {

void StorageCounter::add(const at::Tensor& t) {
  if (!t.defined() || !t.has_storage()) return;
  const auto* impl = t.storage().unsafeGetStorageImpl();
  if (!impl || !seen_.insert(impl).second) return;  // a view or a shared tensor: counted once
  const auto n = static_cast<int64_t>(t.storage().nbytes());
  (t.device().is_cpu() ? cpu_ : device_) += n;
}

void StorageCounter::add(const torch::nn::Module& m) {
  for (const auto& p : m.parameters(/*recurse=*/true)) add(p);
  for (const auto& b : m.buffers(/*recurse=*/true)) add(b);
}

namespace {

StoreLimits with_env(StoreLimits limits, const char* name) {
  if (const auto mb = util::env_count(name, "a whole number of MB (0 turns the byte cap off)"))
    limits.max_bytes = *mb << 20;
  return limits;
}

}  // namespace

StoreSettings StoreSettings::from_env() {
  StoreSettings s;
  s.execution_cache = with_env(s.execution_cache, "CODEFYUI_EXECUTION_CACHE_MAX_MB");
  s.run_output_store = with_env(s.run_output_store, "CODEFYUI_RUN_OUTPUT_STORE_MAX_MB");
  s.node_state_store = with_env(s.node_state_store, "CODEFYUI_NODE_STATE_STORE_MAX_MB");
  return s;
}

}  // namespace codefy::store
