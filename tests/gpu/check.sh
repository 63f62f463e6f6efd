#!/usr/bin/env bash
# GPU checks: builds Codefy's CUDA paths against the CUDA LibTorch inside a
# PyTorch wheel and runs tests/gpu/cuda_check.cpp on the card: device listing
# with memory, bf16/fp16 training steps, the gradient scaler's fused path, a
# real CUDA out-of-memory report and the cache emptied after it; then
# tests/gpu/nccl_check.cpp: NCCL through src/distributed (two ranks on two cards, or
# a world of one on one card, saying the 2-card case was not run).
#
# Needs only python3 with a CUDA PyTorch 2.x, g++, and nlohmann/json.hpp: from
# /usr/include, or from build-gpu-deps/include, which tests/gpu/prepare.sh
# fills on a development machine (carry that folder along). No CMake, no
# network. Takes about 2-4 minutes on 16 cores, most of it compiling.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}

torch_dir=$("$PY" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
abi=$("$PY" -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))')
site=$(dirname "$torch_dir")
echo "LibTorch from $torch_dir (torch $("$PY" -c 'import torch; print(torch.__version__)'), CXX11 ABI $abi)"

json_inc=""
for d in build-gpu-deps/include /usr/include /usr/local/include; do
  if [ -f "$d/nlohmann/json.hpp" ]; then json_inc=$d; break; fi
done
[ -n "$json_inc" ] || { echo "nlohmann/json.hpp not found: run tests/gpu/prepare.sh where it is installed and carry build-gpu-deps"; exit 2; }

# CUDA headers (cuda_runtime_api.h, cublas_v2.h, ...) come with the wheel's nvidia-* packages.
cuda_incs=()
while IFS= read -r d; do cuda_incs+=("-isystem" "$d"); done < <(find "$site/nvidia" -maxdepth 3 -type d -name include 2>/dev/null | sort)
for d in /usr/local/cuda/include; do [ -d "$d" ] && cuda_incs+=("-isystem" "$d"); done

out=build-gpu
mkdir -p "$out/obj"
sources=(src/device/probe.cpp src/device/catalogue.cpp src/device/memory.cpp src/engine/oom.cpp
         src/graph/graph.cpp src/util/atomic_file.cpp src/train/precision.cpp src/train/grad_scaler.cpp
         src/train/grad_buffer.cpp tests/gpu/cuda_check.cpp)
flags=(-std=c++17 -O1 -Wall -Wextra -Werror -DCODEFY_WITH_CUDA -D_GLIBCXX_USE_CXX11_ABI="$abi" -Isrc
       -isystem "$json_inc" -isystem "$torch_dir/include" -isystem "$torch_dir/include/torch/csrc/api/include"
       "${cuda_incs[@]}")
echo "compiling ${#sources[@]} files"
pids=()
for s in "${sources[@]}"; do
  o="$out/obj/$(echo "$s" | tr / _).o"
  g++ "${flags[@]}" -c "$s" -o "$o" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
g++ -o "$out/cuda_check" "$out"/obj/*.o -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" \
  -Wl,--no-as-needed -ltorch -ltorch_cuda -lc10_cuda -Wl,--as-needed -ltorch_cpu -lc10 -ldl -lpthread
echo "running"
"$out/cuda_check"

# NCCL through Codefy's c10d process group (src/distributed): two ranks on two cards,
# or a world of one on a single card (said so). Built apart from the checks
# above; a wheel without Gloo's or NCCL's headers reports that and stops here.
cards=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
dist_sources=(src/distributed/process_group.cpp src/distributed/gradient_reducer.cpp src/distributed/launcher.cpp
              src/train/grad_buffer.cpp tests/gpu/nccl_check.cpp)
mkdir -p "$out/dist"
echo "compiling the NCCL check"
pids=()
for s in "${dist_sources[@]}"; do
  g++ "${flags[@]}" -idirafter build-gpu-deps/gloo-include -idirafter /usr/include -c "$s" \
    -o "$out/dist/$(echo "$s" | tr / _).o" 2>"$out/dist/$(echo "$s" | tr / _).log" &
  pids+=($!)
done
built=1
for p in "${pids[@]}"; do wait "$p" || built=0; done
if [ "$built" = 0 ]; then
  cat "$out"/dist/*.log | head -20
  echo "FAIL the NCCL check did not compile (see above)"
  exit 1
fi
g++ -o "$out/nccl_check" "$out"/dist/*.o -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" \
  -Wl,--no-as-needed -ltorch -ltorch_cuda -lc10_cuda -Wl,--as-needed -ltorch_cpu -lc10 -ldl -lpthread
"$out/nccl_check" "$cards"
