// State dicts: PyTorch's naming and order, and a load that checks before it copies.
#include "train/state_dict.h"

#include "util/text.h"

#include <torch/torch.h>

#include <map>
#include <set>
#include <stdexcept>

namespace codefy::train {
namespace {

/// Parameters then buffers of `module`, then its children, recursively: the
/// order of PyTorch's Module.state_dict(). Does not need shared_from_this,
/// so it works on modules that live on the stack.
void collect_named_tensors(const torch::nn::Module& module, const std::string& prefix, StateDict& out) {
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    if (item.value().defined()) out.emplace_back(prefix + item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/false)) {
    if (item.value().defined()) out.emplace_back(prefix + item.key(), item.value());
  }
  for (const auto& child : module.named_children()) {
    collect_named_tensors(*child.value(), prefix + child.key() + ".", out);
  }
}

std::string shape_string(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

}  // namespace

StateDict state_dict(const torch::nn::Module& module) {
  StateDict out;
  collect_named_tensors(module, "", out);
  // Detached aliases, as in PyTorch: same storage, no autograd history.
  for (auto& item : out) item.second = item.second.detach();
  return out;
}

void load_state_dict(torch::nn::Module& module, const StateDict& dict) {
  StateDict own;
  collect_named_tensors(module, "", own);
  std::map<std::string, const at::Tensor*> given;
  std::vector<std::string> duplicates;
  for (const auto& [name, tensor] : dict) {
    if (!given.emplace(name, &tensor).second) duplicates.push_back(name);
  }

  // Check everything before copying anything: a failed load leaves the
  // module as it was.
  std::vector<std::string> missing, unexpected, mismatched;
  std::set<std::string> own_names;
  for (const auto& [name, target] : own) {
    own_names.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
    } else if (!it->second->defined()) {
      mismatched.push_back(name + " (undefined tensor, expected " + shape_string(target.sizes()) + ")");
    } else if (it->second->sizes() != target.sizes()) {
      mismatched.push_back(name + " (file " + shape_string(it->second->sizes()) + ", model " +
                           shape_string(target.sizes()) + ")");
    }
  }
  for (const auto& [name, tensor] : dict) {
    if (!own_names.count(name)) unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty() || !duplicates.empty()) {
    std::string msg = "state_dict does not match the model:";
    auto list = [&msg](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      msg += std::string("\n  ") + what + ": " + util::join(names, ", ");
    };
    list("missing keys", missing);
    list("unexpected keys", unexpected);
    list("shape mismatches", mismatched);
    list("duplicate keys", duplicates);
    throw std::runtime_error(msg);
  }

  torch::NoGradGuard no_grad;
  for (auto& [name, target] : own) target.copy_(*given.at(name));
}

torch::Tensor tensor_for_file(const std::string& name, const torch::Tensor& t) {
  if (!t.defined()) throw std::invalid_argument("tensor '" + name + "' is undefined");
  if (t.layout() != at::kStrided) throw std::invalid_argument("tensor '" + name + "' is not dense");
  at::Tensor out = t.detach().to(at::kCPU);
  if (!out.is_contiguous() || out.storage_offset() != 0 || out.storage().nbytes() != out.nbytes()) {
    out = out.clone(at::MemoryFormat::Contiguous);
  }
  return out;
}

}  // namespace codefy::train
