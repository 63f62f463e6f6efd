// NCCL check for tests/gpu/check.sh: Codefy's c10d process group with the
// NCCL backend on CUDA tensors. With two or more cards, two ranks (a forked
// child on cuda:1) all-reduce and average a gradient buffer; with one, a
// world of one runs the same calls and says the 2-card case was not run.
//   nccl_check CARDS   (the card count, read by the caller before CUDA starts here)
#include "distributed/launcher.h"
#include "distributed/process_group.h"
#include "train/grad_buffer.h"

#include <torch/torch.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

using namespace codefy;

/// One rank's checks on cuda:<rank>; returns the failures ("" when none).
std::string rank_main(int rank, int world, uint16_t port) {
  std::string failures;
  try {
    distributed::WorldInfo w;
    w.rank = rank;
    w.world_size = world;
    w.local_rank = rank;
    w.master_port = port;
    w.timeout = std::chrono::seconds(60);
    distributed::ProcessGroupOptions o;
    o.backend = "nccl";
    distributed::ProcessGroup group(w, o);
    const auto on = torch::TensorOptions().device(torch::Device(torch::kCUDA, static_cast<int8_t>(rank)));
    const torch::Tensor t = torch::full({1000}, static_cast<float>(rank + 1), on);
    group.all_reduce_sum({t});
    const float expected = static_cast<float>(world * (world + 1) / 2);
    if (!t.eq(expected).all().item<bool>()) failures += "all_reduce_sum; ";
    const torch::Tensor p = torch::zeros({3}, on.requires_grad(true));
    p.mutable_grad() = torch::full({3}, static_cast<float>(2 * (rank + 1)), on);
    train::GradBuffer grads({p});
    grads.sync();
    group.make_gradient_reducer()->reduce(grads);
    if (!p.grad().eq(static_cast<float>(world + 1)).all().item<bool>()) failures += "gradient mean; ";
  } catch (const std::exception& e) {
    failures += std::string("threw: ") + e.what();
  }
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const int cards = argc > 1 ? std::stoi(argv[1]) : 1;
  if (!distributed::has_nccl()) {
    std::printf("FAIL this CUDA LibTorch build has no NCCL (or nccl.h was not found when compiling)\n");
    return 1;
  }
  const uint16_t port = distributed::find_free_port("127.0.0.1");
  const int world = cards >= 2 ? 2 : 1;
  pid_t child = -1;
  if (world == 2) {
    child = fork();  // before this process touches CUDA
    if (child == 0) {
      const std::string f = rank_main(1, 2, port);
      if (!f.empty()) std::printf("rank 1: %s\n", f.c_str());
      _exit(f.empty() ? 0 : 1);
    }
  }
  const std::string failures = rank_main(0, world, port);
  bool ok = failures.empty();
  if (!ok) std::printf("rank 0: %s\n", failures.c_str());
  if (child > 0) {
    int status = 0;
    waitpid(child, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  std::printf("%s NCCL process group, world size %d%s\n", ok ? "ok  " : "FAIL", world,
              world == 1 ? " (the 2-card case was not run: this machine has one card)" : " (two cards)");
  return ok ? 0 : 1;
}
