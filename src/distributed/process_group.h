// A data-parallel world on PyTorch's c10d: rendezvous through a FileStore
// (one machine) or a TCPStore that rank 0 hosts (several), a Gloo or NCCL
// process group, and the collectives training uses.
#pragma once

#include "train/data_parallel.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace codefy::distributed {

/// The default time a rank waits for the others (rendezvous, a collective).
inline constexpr std::chrono::milliseconds kDefaultTimeout{60000};

/// Where this process sits in a data-parallel world: torchrun's variables.
struct WorldInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 29500;
  /// One machine: the ranks meet through a c10d FileStore at this path (in a
  /// folder of this user's; no port listens); empty: through a TCPStore that
  /// rank 0 hosts on master_addr:master_port.
  std::string store_file;
  /// How long a rank waits for the others before it fails.
  std::chrono::milliseconds timeout = kDefaultTimeout;

  /// From WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
  /// CODEFY_RENDEZVOUS_FILE and CODEFY_DIST_TIMEOUT_S (seconds); nullopt when
  /// WORLD_SIZE is unset.
  /// Throws std::invalid_argument naming the variable that is malformed.
  static std::optional<WorldInfo> from_env();
};

/// Whether this LibTorch was built with NCCL (CUDA builds that ship it).
bool has_nccl();

/// The backend for training on `device_type` ("cpu", "cuda"): NCCL on CUDA
/// when this LibTorch has it, else Gloo.
std::string default_backend(const std::string& device_type);

/// Options of a process group.
struct ProcessGroupOptions {
  /// "gloo" or "nccl"; empty: default_backend("cpu").
  std::string backend;
  /// Gradient all-reduce bucket size (PyTorch DDP's bucket_cap_mb, 25 MiB).
  int64_t bucket_bytes = 25 << 20;
};

/// One rank's membership in the world: a client of the rendezvous store, the c10d process group, and a heartbeat thread
/// that publishes what this rank is doing, so a failed collective can say which rank stopped answering and what it was
/// doing.
class ProcessGroup : public train::DataParallel {
 public:
  /// Joins the world; every rank calls it. Throws std::runtime_error with a
  /// clear message when rank 0 cannot host the store (port taken) or the
  /// others do not arrive within the timeout.
  ProcessGroup(const WorldInfo& world, const ProcessGroupOptions& options = {});
  ~ProcessGroup() override;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const override { return world_.rank; }
  int world_size() const override { return world_.world_size; }
  std::string backend() const override { return backend_; }
  nlohmann::json rendezvous() const override { return rendezvous_; }
  const WorldInfo& world() const { return world_; }

  void broadcast(const std::vector<at::Tensor>& tensors, int root = 0) override;
  void all_reduce_sum(const std::vector<at::Tensor>& tensors) override;
  void barrier();
  std::shared_ptr<train::GradientReducer> make_gradient_reducer() override;
  void set_activity(const std::string& activity) override;
  nlohmann::json counters() const override;

  /// Sums `tensor` (contiguous) in place over the ranks without waiting; the
  /// bucketed gradient reducer launches its buckets with it.
  struct Pending;
  std::shared_ptr<Pending> all_reduce_async(const at::Tensor& tensor);
  /// Waits for an all_reduce_async; a failure says which rank stopped answering.
  void wait(const std::shared_ptr<Pending>& pending, const std::string& what);
  /// Counts a gradient reduction (one per update) of `buckets` all-reduces
  /// and `bytes`, taking `seconds`.
  void count_reduction(int64_t buckets, int64_t bytes, double seconds);

 private:
  struct State;
  [[noreturn]] void fail(const std::string& what, const std::exception& cause);
  /// Joins (rank 0: hosts) the TCPStore on master_addr:master_port.
  void connect_tcp_store();
  WorldInfo world_;
  std::string backend_;
  nlohmann::json rendezvous_;
  int64_t bucket_bytes_;
  std::unique_ptr<State> state_;
};

}  // namespace codefy::distributed
