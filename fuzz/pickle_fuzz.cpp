// Python's torch.save files (a model upload, a weights param): a zip whose
// data.pkl is a pickle. An input that starts as a zip does ("PK\3\4") is the
// whole file; any other input is the pickle, put into a valid zip beside a
// few storages (data/0: 64 bytes, data/1: 7, data/2: empty), so the fuzzer
// spends its time on the unpickler rather than on the zip's checksums.
// read_torch_zip may refuse with std::runtime_error, or c10::Error for a
// damaged zip (its contract); what it returns must be readable whole.
#include "fuzz/fuzz_targets.h"
#include "train/pickle_reader.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include <stdexcept>

namespace codefy::fuzz {

namespace {

std::string zip_around(std::string_view pkl) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&out](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return n;
  });
  writer.writeRecord("data.pkl", pkl.data(), pkl.size());
  static const std::string storage(64, '\x01');
  writer.writeRecord("data/0", storage.data(), 64);
  writer.writeRecord("data/1", storage.data(), 7);
  writer.writeRecord("data/2", storage.data(), 0);
  writer.writeEndOfFile();
  return out;
}

}  // namespace

void pickle(std::string_view data) {
  const bool whole_zip = data.substr(0, 4) == std::string_view("PK\3\4", 4);
  const std::string bytes = whole_zip ? std::string(data) : zip_around(data);
  train::StateDict dict;
  try {
    dict = train::read_torch_zip(bytes, "fuzz");
  } catch (const std::runtime_error&) {
    return;
  } catch (const c10::Error&) {
    return;
  }
  // Every tensor it returns is whole: reading each element touches its memory.
  for (const auto& [name, t] : dict) {
    check(t.defined(), "tensor '" + name + "' is undefined");
    if (t.numel() > 0) (void)t.to(at::kDouble).sum().item<double>();
  }
}

}  // namespace codefy::fuzz
