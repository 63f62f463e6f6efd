// Precompiled header for every translation unit that uses LibTorch.
#pragma once
#include <torch/torch.h>
#include <nlohmann/json.hpp>
