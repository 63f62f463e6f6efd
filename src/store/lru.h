// One generic least-recently-used store bounded by bytes and by count:
// the execution cache, the run output store and the node state store are
// instances of it. Thread-safe; sizes are given at insertion
// (measured when stored, not re-measured as values grow).
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace codefy::store {

struct StoreLimits {
  int64_t max_bytes = 0;   ///< 0: no byte cap (the count cap remains)
  size_t max_entries = 0;  ///< 0: no count cap
};

struct StoreStats {
  size_t entries = 0;
  int64_t bytes = 0;
  int64_t evictions = 0;
};

template <typename V>
class LruStore {
 public:
  explicit LruStore(StoreLimits limits) : limits_(limits) {}

  /// Stores `value` as the most recently used entry (replacing `key`), then
  /// evicts least recently used entries until both caps hold. A value larger
  /// than the byte cap on its own is not stored; returns whether it was.
  bool put(const std::string& key, V value, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    remove_locked(key);
    if (limits_.max_bytes > 0 && bytes > limits_.max_bytes) return false;
    order_.push_front(Entry{key, std::move(value), bytes});
    index_[key] = order_.begin();
    bytes_ += bytes;
    while (!order_.empty() && ((limits_.max_bytes > 0 && bytes_ > limits_.max_bytes) ||
                               (limits_.max_entries > 0 && order_.size() > limits_.max_entries))) {
      remove_locked(order_.back().key);
      ++evictions_;
    }
    return true;
  }

  /// The value, marked most recently used; nullopt when absent.
  std::optional<V> get(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->value;
  }

  bool contains(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return index_.count(key) > 0;
  }

  bool erase(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    return remove_locked(key);
  }

  /// Removes every entry whose key matches; returns how many.
  size_t erase_if(const std::function<bool(const std::string&)>& match) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> doomed;
    for (const auto& e : order_)
      if (match(e.key)) doomed.push_back(e.key);
    for (const auto& k : doomed) remove_locked(k);
    return doomed.size();
  }

  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    order_.clear();
    index_.clear();
    bytes_ = 0;
  }

  StoreStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {order_.size(), bytes_, evictions_};
  }
  const StoreLimits& limits() const { return limits_; }

  /// Keys from most to least recently used.
  std::vector<std::string> keys() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> k;
    for (const auto& e : order_) k.push_back(e.key);
    return k;
  }

 private:
  struct Entry {
    std::string key;
    V value;
    int64_t bytes;
  };
  bool remove_locked(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    bytes_ -= it->second->bytes;
    order_.erase(it->second);
    index_.erase(it);
    return true;
  }

  const StoreLimits limits_;
  mutable std::mutex mutex_;
  std::list<Entry> order_;  ///< front: most recently used
  std::unordered_map<std::string, typename std::list<Entry>::iterator> index_;
  int64_t bytes_ = 0;
  int64_t evictions_ = 0;
};

/// The caps of the three stores, from the environment: MB values in
/// CODEFYUI_EXECUTION_CACHE_MAX_MB (default 1024, per connection),
/// CODEFYUI_RUN_OUTPUT_STORE_MAX_MB (2048; and 20 runs),
/// CODEFYUI_NODE_STATE_STORE_MAX_MB (1024; and 200 modules). 0 turns the byte
/// cap off. Throws std::invalid_argument naming a variable that is not a
/// whole number.
struct StoreSettings {
  StoreLimits execution_cache{int64_t{1024} << 20, 10000};
  StoreLimits run_output_store{int64_t{2048} << 20, 20};
  StoreLimits node_state_store{int64_t{1024} << 20, 200};
  static StoreSettings from_env();
};

}  // namespace codefy::store
