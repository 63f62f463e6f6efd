#!/usr/bin/env bash
# Installs every Debian 12 package Codefy needs to build, test and run.
# Idempotent: when everything is present it only checks and returns.
# Extra packages may be named as arguments.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev            # LibTorch 1.13.1 (CPU): the tensor and autograd engine
  libgloo-dev             # Gloo's headers: LibTorch's c10d (Gloo built in) needs them for strategy ddp
  libopenblas0-openmp     # optimized BLAS behind libblas.so.3 (the reference BLAS is ~27x slower)
  nlohmann-json3-dev      # graph.json parsing and writing (header-only)
  libcli11-dev            # command-line parsing (header-only)
  libboost1.81-dev        # Boost.Beast/Asio for the server (header-only)
  libgtest-dev            # unit tests
  python3-torch           # PyTorch 1.13 for /usr/bin/python3: the export tests import model.py and torch.jit.load the TorchScript with it (test_model), and bench/step_time.sh's Python contender
  libsqlite3-dev          # the run history (codefy-data/runs.db): an embedded database two processes can share
  libprotobuf-dev         # protobuf's library: the run history's TensorBoard event records
  protobuf-compiler       # protoc: compiles src/store/tensorboard_event.proto at build time
  libpng-dev zlib1g-dev   # Visualize's PNG output, ImageReader; .gz idx files
  libsvm-dev              # LIBSVM, what scikit-learn's SVC wraps: SVMClassifier
  libplplot-dev plplot-driver-cairo  # Visualize's plots: PLplot draws axes, text and data; its memcairo driver renders in memory
  dataset-fashion-mnist   # the Fashion-MNIST idx files for the main example
  chromium                # the editor's browser tests (Playwright drives it; it never downloads a browser)
  iproute2                # ss: the DDP tests check which addresses the ranks listen on
  fonts-noto-cjk          # Chinese glyphs for the editor in Traditional Chinese (its browser tests and screenshots)
  clang-14                # the sanitizer build and the fuzz targets (scripts/test.sh --sanitize, scripts/fuzz.sh): libFuzzer is clang's
  clang-format-14         # the house style, checked by ctest (scripts/format.sh --check)
  clang-tidy-14           # bugprone-* and performance-* checks over src/ (scripts/tidy.sh)
  libclang-rt-14-dev      # clang's runtimes for them: libFuzzer, AddressSanitizer, UndefinedBehaviorSanitizer, ThreadSanitizer
)
# The editor (web/) builds with Node.js and npm: Debian's only when the machine has none.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Make sure libblas.so.3 resolves to OpenBLAS, not the reference BLAS.
alt=libblas.so.3-x86_64-linux-gnu
openblas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3
if [ -e "$openblas" ] && [ "$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)" != "$(readlink -f "$openblas")" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO update-alternatives --set "$alt" "$openblas"
fi
echo "setup: all packages present"
