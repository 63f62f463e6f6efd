#include "distributed/process_group.h"

#include "distributed/gradient_reducer.h"
#include "distributed/launcher.h"

// Debian's LibTorch has Gloo compiled in; its c10d header needs this macro
// and libgloo-dev's headers.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
// NCCL only where this LibTorch was built for CUDA and NCCL's header is there.
#if defined(CODEFY_WITH_CUDA) && __has_include(<nccl.h>) && \
    __has_include(<torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>)
#define CODEFY_WITH_NCCL 1
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/csrc/utils/tensor_flatten.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace codefy::distributed {

namespace {

/// An environment variable as an integer in [lo, hi]; nullopt when unset.
std::optional<int64_t> env_int(const char* name, int64_t lo, int64_t hi) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used == std::string(v).size() && x >= lo && x <= hi) return x;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(std::string(name) + "=\"" + v + "\" is not an integer in [" + std::to_string(lo) + ", " +
                              std::to_string(hi) + "]");
}

/// The heartbeat key of a rank: "<count>|<activity>".
std::string beat_key(int rank) { return "codefy/beat/" + std::to_string(rank); }

std::string text_of(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

/// LibTorch's first line, without the C++ backtrace it appends.
std::string first_line(const std::exception& e) {
  std::string s = e.what();
  if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

}  // namespace

std::optional<WorldInfo> WorldInfo::from_env() {
  const auto world_size = env_int("WORLD_SIZE", 1, 1 << 20);
  if (!world_size) return std::nullopt;
  WorldInfo w;
  w.world_size = static_cast<int>(*world_size);
  w.rank = static_cast<int>(env_int("RANK", 0, w.world_size - 1).value_or(0));
  w.local_rank = static_cast<int>(env_int("LOCAL_RANK", 0, w.world_size - 1).value_or(w.rank));
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) w.master_addr = a;
  if (const char* f = std::getenv("CODEFY_RENDEZVOUS_FILE"); f && *f) w.store_file = f;
  w.master_port = static_cast<uint16_t>(env_int("MASTER_PORT", 1, 65535).value_or(w.master_port));
  if (const auto t = env_int("CODEFY_DIST_TIMEOUT_S", 1, int64_t{7} * 24 * 3600)) w.timeout = std::chrono::seconds(*t);
  return w;
}

bool has_nccl() {
#ifdef CODEFY_WITH_NCCL
  return true;
#else
  return false;
#endif
}

std::string default_backend(const std::string& device_type) {
  return device_type == "cuda" && has_nccl() ? "nccl" : "gloo";
}

// LibTorch 2 split the backends (Gloo, NCCL) from the ProcessGroup that
// dispatches to them; 1.13's backends are ProcessGroups themselves.
#if TORCH_VERSION_MAJOR >= 2
using Backend = c10d::Backend;
#else
using Backend = c10d::ProcessGroup;
#endif

/// A launched all-reduce.
struct ProcessGroup::Pending {
  c10::intrusive_ptr<c10d::Work> work;
};

struct ProcessGroup::State {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Backend> group;
  // The heartbeat thread's own store client (a client is not thread-safe).
  c10::intrusive_ptr<c10d::Store> beat_store;
  std::thread beat;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::string activity = "starting";
  int64_t beats = 0;
  // Counters of the gradient reductions.
  int64_t reductions = 0, bucket_all_reduces = 0, bytes = 0;
  double seconds = 0.0;

  /// Stops and joins the heartbeat (also when the constructor failed after starting it).
  ~State() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    if (beat.joinable()) beat.join();
  }
};

ProcessGroup::ProcessGroup(const WorldInfo& world, const ProcessGroupOptions& options)
    : world_(world),
      backend_(options.backend.empty() ? default_backend("cpu") : options.backend),
      bucket_bytes_(options.bucket_bytes),
      state_(std::make_unique<State>()) {
  if (world_.world_size < 1 || world_.rank < 0 || world_.rank >= world_.world_size)
    throw std::invalid_argument("rank " + std::to_string(world_.rank) + " is outside a world of " +
                                std::to_string(world_.world_size));
  if (backend_ == "nccl" && !has_nccl())
    throw std::runtime_error("backend nccl is not in this LibTorch (a CPU build); use gloo");
  if (backend_ != "nccl" && backend_ != "gloo")
    throw std::invalid_argument("unknown backend \"" + backend_ + "\" (gloo or nccl)");

  if (!world_.store_file.empty()) {
    // One machine: PyTorch's FileStore, in a folder only this user may enter.
    // No port listens, so nothing on the network (or another local user)
    // can reach the store, which has no authentication.
    state_->store = c10::make_intrusive<c10d::FileStore>(world_.store_file, -1);
    state_->store->setTimeout(world_.timeout);
    state_->beat_store = c10::make_intrusive<c10d::FileStore>(world_.store_file, -1);  // the heartbeat's own
    rendezvous_ = {{"store", "file"}, {"path", world_.store_file}};
  } else {
    connect_tcp_store();
  }
  state_->beat_store->set(beat_key(world_.rank), std::vector<uint8_t>{'0', '|'});
  state_->beat = std::thread([&s = *state_, rank = world_.rank] {
    std::unique_lock<std::mutex> lock(s.mutex);
    while (!s.stopping) {
      const std::string value = std::to_string(++s.beats) + "|" + s.activity;
      lock.unlock();
      try {
        s.beat_store->set(beat_key(rank), std::vector<uint8_t>(value.begin(), value.end()));
      } catch (const std::exception&) {
        // The store's host is gone; the next collective says so.
      }
      lock.lock();
      s.wake.wait_for(lock, std::chrono::milliseconds(500), [&s] { return s.stopping; });
    }
  });

  try {
    if (backend_ == "gloo") {
      auto o = c10d::ProcessGroupGloo::Options::create(world_.timeout);
      // One machine: loopback. Several: the interface GLOO_SOCKET_IFNAME
      // names (as PyTorch), else the address this host's name resolves to.
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      if (ifname && *ifname)
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      else if (!world_.store_file.empty() || world_.master_addr == "127.0.0.1" || world_.master_addr == "localhost")
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      o->threads = 2;
      state_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(state_->store, world_.rank, world_.world_size, o);
    } else {
#ifdef CODEFY_WITH_NCCL
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = world_.timeout;
      state_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(state_->store, world_.rank, world_.world_size, o);
#endif
    }
  } catch (const std::exception& e) {
    fail("the rendezvous of the " + backend_ + " process group", e);
  }
  set_activity("ready");
}

void ProcessGroup::connect_tcp_store() {
  const std::string where = world_.master_addr + ":" + std::to_string(world_.master_port);
  c10d::TCPStoreOptions so;
  so.port = world_.master_port;
  so.isServer = world_.rank == 0;
  so.numWorkers = static_cast<size_t>(world_.world_size);
  so.waitWorkers = false;  // the process group's rendezvous waits for everyone
  so.timeout = world_.timeout;
  // The store has no authentication: it should listen on the master address
  // only. LibTorch takes a socket bound here from 2.8 on; before, its server
  // binds every interface, and the port must be firewalled (README).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8)
  constexpr bool kBindsMasterAddr = true;
  if (so.isServer) {
    const int fd = bind_tcp_socket(world_.master_addr, world_.master_port);
    if (::listen(fd, SOMAXCONN) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw std::runtime_error("rank 0 cannot listen on " + where + ": " + why);
    }
    so.masterListenFd = fd;  // the store's server takes it over
  }
#else
  constexpr bool kBindsMasterAddr = false;
#endif
  try {
    state_->store = c10::make_intrusive<c10d::TCPStore>(world_.master_addr, so);
  } catch (const std::exception& e) {
    if (world_.rank == 0)
      throw std::runtime_error("rank 0 cannot host the rendezvous store on " + where + ": " + first_line(e) +
                               " (is another run using this port? choose another --master-port)");
    throw std::runtime_error("rank " + std::to_string(world_.rank) + " cannot reach the rendezvous store on " + where +
                             " within " + std::to_string(world_.timeout.count() / 1000) + " s: " + first_line(e));
  }
  // The heartbeat thread's own client.
  so.isServer = false;
  so.port = static_cast<c10d::TCPStore&>(*state_->store).getPort();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 8)
  so.masterListenFd.reset();
#endif
  state_->beat_store = c10::make_intrusive<c10d::TCPStore>(world_.master_addr, so);
  rendezvous_ = {{"store", "tcp"},
                 {"address", world_.master_addr + ":" + std::to_string(so.port)},
                 {"listens_on", kBindsMasterAddr ? world_.master_addr : std::string("every interface")}};
  if (!kBindsMasterAddr)
    rendezvous_["warning"] =
        "this LibTorch's TCPStore listens on every interface and has no authentication: firewall port " +
        std::to_string(so.port) + " to the cluster's machines";
}

ProcessGroup::~ProcessGroup() = default;

void ProcessGroup::set_activity(const std::string& activity) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->activity = activity;
}

void ProcessGroup::fail(const std::string& what, const std::exception& cause) {
  std::string activity;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    activity = state_->activity;
  }
  std::string message =
      "rank " + std::to_string(world_.rank) + " failed in " + what + " (" + activity + "): " + first_line(cause) + ". ";
  // Which rank stopped answering: read every heartbeat twice, a second and a
  // half apart; a rank whose count did not move is dead or stuck.
  try {
    state_->store->setTimeout(std::chrono::seconds(3));
    std::vector<std::string> before(static_cast<size_t>(world_.world_size));
    std::string silent;
    for (int r = 0; r < world_.world_size; ++r) {
      if (state_->store->check({beat_key(r)}))
        before[r] = text_of(state_->store->get(beat_key(r)));
      else
        silent += (silent.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " never joined";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    for (int r = 0; r < world_.world_size; ++r) {
      if (r == world_.rank || before[r].empty()) continue;
      const std::string now = text_of(state_->store->get(beat_key(r)));
      if (now != before[r]) continue;
      const auto bar = now.find('|');
      silent += (silent.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) +
                " stopped answering; it was last " + (bar == std::string::npos ? now : now.substr(bar + 1));
    }
    message += silent.empty() ? "Every other rank is still alive (one of them failed on its own)." : silent + ".";
  } catch (const std::exception&) {
    message += world_.rank == 0 ? "The heartbeats cannot be read."
                                : "Rank 0 (the rendezvous host) stopped answering: it died or its machine is gone.";
  }
  throw std::runtime_error(message);
}

void ProcessGroup::broadcast(const std::vector<at::Tensor>& tensors, int root) {
  // One collective per dtype: the tensors flattened into one buffer.
  std::map<c10::ScalarType, std::vector<at::Tensor>> by_type;
  for (const auto& t : tensors)
    if (t.defined() && t.numel() > 0) by_type[t.scalar_type()].push_back(t);
  for (auto& [type, group] : by_type) {
    std::vector<at::Tensor> flat = {torch::utils::flatten_dense_tensors(group)};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    try {
      state_->group->broadcast(flat, o)->wait();
    } catch (const std::exception& e) {
      fail("a broadcast from rank " + std::to_string(root), e);
    }
    const auto parts = torch::utils::unflatten_dense_tensors(flat[0], group);
    for (size_t i = 0; i < group.size(); ++i) group[i].copy_(parts[i]);
  }
}

void ProcessGroup::all_reduce_sum(const std::vector<at::Tensor>& tensors) {
  for (const auto& t : tensors) wait(all_reduce_async(t), "an all-reduce");
}

void ProcessGroup::barrier() {
  try {
    state_->group->barrier()->wait();
  } catch (const std::exception& e) {
    fail("a barrier", e);
  }
}

std::shared_ptr<ProcessGroup::Pending> ProcessGroup::all_reduce_async(const at::Tensor& tensor) {
  std::vector<at::Tensor> one = {tensor};
  auto pending = std::make_shared<Pending>();
  try {
    pending->work = state_->group->allreduce(one);
  } catch (const std::exception& e) {
    fail("an all-reduce", e);
  }
  return pending;
}

void ProcessGroup::wait(const std::shared_ptr<Pending>& pending, const std::string& what) {
  try {
    pending->work->wait();
  } catch (const std::exception& e) {
    fail(what, e);
  }
}

void ProcessGroup::count_reduction(int64_t buckets, int64_t bytes, double seconds) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  ++state_->reductions;
  state_->bucket_all_reduces += buckets;
  state_->bytes += bytes;
  state_->seconds += seconds;
}

nlohmann::json ProcessGroup::counters() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const double n = static_cast<double>(std::max<int64_t>(state_->reductions, 1));
  return {{"gradient_reductions", state_->reductions},
          {"bucket_all_reduces", state_->bucket_all_reduces},
          {"bucket_bytes", bucket_bytes_},
          {"bytes_per_reduction", static_cast<double>(state_->bytes) / n},
          {"all_reduce_seconds_per_reduction", state_->seconds / n}};
}

std::shared_ptr<train::GradientReducer> ProcessGroup::make_gradient_reducer() {
  return std::make_shared<BucketedGradientReducer>(*this, bucket_bytes_);
}

}  // namespace codefy::distributed
