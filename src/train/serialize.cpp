// Weight files: PyTorch pickles (torch.load-compatible) and safetensors,
// written atomically, read defensively.
#include "train/serialize.h"

#include "util/atomic_file.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <unordered_map>

namespace codefy::train {

namespace fs = std::filesystem;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors and PyTorch tensor data are little-endian; a big-endian host needs byte swapping");

namespace {

/// Parameters then buffers of `module`, then its children, recursively: the
/// order of PyTorch's Module.state_dict(). Does not need shared_from_this,
/// so it works on modules that live on the stack.
void collect(const torch::nn::Module& module, const std::string& prefix, StateDict& out) {
  for (const auto& item : module.named_parameters(/*recurse=*/false)) {
    if (item.value().defined()) out.emplace_back(prefix + item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/false)) {
    if (item.value().defined()) out.emplace_back(prefix + item.key(), item.value());
  }
  for (const auto& child : module.named_children()) collect(*child.value(), prefix + child.key() + ".", out);
}

std::string shape_string(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

/// A tensor as it goes to disk: detached, on the CPU, contiguous and owning
/// exactly its bytes (a slice of a larger tensor would otherwise drag the
/// whole storage into a pickle).
at::Tensor to_disk(const std::string& name, const at::Tensor& t) {
  if (!t.defined()) throw std::invalid_argument("tensor '" + name + "' is undefined");
  if (t.layout() != at::kStrided) throw std::invalid_argument("tensor '" + name + "' is not dense");
  at::Tensor out = t.detach().to(at::kCPU);
  if (!out.is_contiguous() || out.storage_offset() != 0 || out.storage().nbytes() != out.nbytes()) {
    out = out.clone(at::MemoryFormat::Contiguous);
  }
  return out;
}

// --- safetensors dtypes -----------------------------------------------------

struct DtypeName {
  at::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {at::kDouble, "F64"}, {at::kFloat, "F32"}, {at::kHalf, "F16"}, {at::kBFloat16, "BF16"},
    {at::kLong, "I64"},   {at::kInt, "I32"},   {at::kShort, "I16"}, {at::kChar, "I8"},
    {at::kByte, "U8"},    {at::kBool, "BOOL"},
};

const char* safetensors_dtype(const std::string& name, at::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (d.type == type) return d.name;
  }
  throw std::invalid_argument("tensor '" + name + "' has dtype " + std::string(c10::toString(type)) +
                              ", which safetensors cannot store here");
}

std::optional<at::ScalarType> scalar_type_of(const std::string& dtype) {
  for (const auto& d : kDtypes) {
    if (dtype == d.name) return d.type;
  }
  return std::nullopt;
}

// --- files --------------------------------------------------------------------

bool has_suffix_ci(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.rbegin(), suffix.rend(), s.rbegin(),
                    [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

/// A bool tensor read from a file must hold only 0 and 1: any other byte is
/// undefined behaviour in C++ code that reads it.
void check_bools(const at::Tensor& t) {
  if (t.numel() > 0 && t.view(at::kByte).gt(1).any().item<bool>()) {
    throw std::runtime_error("bool tensor holds bytes other than 0 and 1");
  }
}

// --- Reading torch.save pickles ------------------------------------------------
//
// torch::pickle_load is not used for reading: LibTorch 1.13's unpickler turns
// collections.OrderedDict into None (so every Python Module.state_dict()
// fails), lacks SETITEM (Python's opcode for a one-entry dict), and crashes on
// some corrupt pickles. This reader covers what torch.save (Python) and
// torch::pickle_save (C++) write for a dict of tensors: containers, scalars,
// strings, OrderedDict (its BUILD state, _metadata, is dropped), TorchScript
// type tags, tensors rebuilt from storages in the zip. Anything else (a
// pickled nn.Module, custom classes) is refused with a message. It never
// trusts the file: every read is bounds-checked, every view checked against
// its storage.

struct PyObject;
using PyRef = std::shared_ptr<PyObject>;

/// A Python value, as much of one as a state_dict needs.
struct PyObject {
  enum class Kind { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;
  int64_t int_value = 0;
  double float_value = 0;
  std::string text;  // Str, Bytes; "module.name" for Global
  std::vector<PyRef> items;
  std::vector<std::pair<PyRef, PyRef>> entries;
  at::Storage storage;
  at::ScalarType dtype = at::kByte;
  at::Tensor tensor;
};

const char* kind_name(PyObject::Kind kind) {
  switch (kind) {
    case PyObject::Kind::None: return "None";
    case PyObject::Kind::Bool: return "bool";
    case PyObject::Kind::Int: return "int";
    case PyObject::Kind::Float: return "float";
    case PyObject::Kind::Str: return "str";
    case PyObject::Kind::Bytes: return "bytes";
    case PyObject::Kind::Tuple: return "tuple";
    case PyObject::Kind::List: return "list";
    case PyObject::Kind::Dict: return "dict";
    case PyObject::Kind::Global: return "class or function";
    case PyObject::Kind::Storage: return "storage";
    case PyObject::Kind::Tensor: return "tensor";
  }
  return "object";
}

/// Unpickles `data.pkl` of a torch.save zip, reading storages from `reader`.
class PythonUnpickler {
 public:
  PythonUnpickler(const std::string& pkl, caffe2::serialize::PyTorchStreamReader& reader)
      : pkl_(pkl), reader_(reader) {}

  PyRef load() {
    while (true) {
      const auto op = static_cast<unsigned char>(take(1)[0]);
      switch (op) {
        case 0x80: take(1); break;                        // PROTO
        case 0x95: take(8); break;                        // FRAME: the whole pickle is in memory
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case '.': {                                       // STOP
          PyRef result = pop();
          return result;
        }
        case 'N': push(make(PyObject::Kind::None)); break;
        case 0x88: push(make_int(PyObject::Kind::Bool, 1)); break;
        case 0x89: push(make_int(PyObject::Kind::Bool, 0)); break;
        case 'J': push(make_int(PyObject::Kind::Int, static_cast<int32_t>(little_endian(take(4))))); break;
        case 'K': push(make_int(PyObject::Kind::Int, static_cast<int64_t>(little_endian(take(1))))); break;
        case 'M': push(make_int(PyObject::Kind::Int, static_cast<int64_t>(little_endian(take(2))))); break;
        case 0x8a: push(make_int(PyObject::Kind::Int, long_bytes(take(little_endian(take(1)))))); break;
        case 0x8b: push(make_int(PyObject::Kind::Int, long_bytes(take(little_endian(take(4)))))); break;
        case 'I': {  // INT: "01"/"00" are True/False in protocol 0
          const std::string line = take_line();
          if (line == "01" || line == "00") {
            push(make_int(PyObject::Kind::Bool, line == "01"));
          } else {
            push(make_int(PyObject::Kind::Int, parse_int(line)));
          }
          break;
        }
        case 'L': {
          std::string line = take_line();
          if (!line.empty() && line.back() == 'L') line.pop_back();
          push(make_int(PyObject::Kind::Int, parse_int(line)));
          break;
        }
        case 'G': {  // BINFLOAT is big-endian
          const std::string b = take(8);
          uint64_t bits = 0;
          for (char c : b) bits = (bits << 8) | static_cast<unsigned char>(c);
          auto obj = make(PyObject::Kind::Float);
          std::memcpy(&obj->float_value, &bits, 8);
          push(obj);
          break;
        }
        case 'F': {
          auto obj = make(PyObject::Kind::Float);
          obj->float_value = std::strtod(take_line().c_str(), nullptr);
          push(obj);
          break;
        }
        case 'X': push(make_text(PyObject::Kind::Str, take(little_endian(take(4))))); break;
        case 0x8c: push(make_text(PyObject::Kind::Str, take(little_endian(take(1))))); break;
        case 0x8d: push(make_text(PyObject::Kind::Str, take(little_endian(take(8))))); break;
        case 'V': push(make_text(PyObject::Kind::Str, take_line())); break;
        case 'T': push(make_text(PyObject::Kind::Str, take(little_endian(take(4))))); break;
        case 'U': push(make_text(PyObject::Kind::Str, take(little_endian(take(1))))); break;
        case 'S': {  // STRING: a quoted repr
          std::string line = take_line();
          if (line.size() >= 2 && (line.front() == '\'' || line.front() == '"')) line = line.substr(1, line.size() - 2);
          push(make_text(PyObject::Kind::Str, line));
          break;
        }
        case 'B': push(make_text(PyObject::Kind::Bytes, take(little_endian(take(4))))); break;
        case 'C': push(make_text(PyObject::Kind::Bytes, take(little_endian(take(1))))); break;
        case 0x8e: push(make_text(PyObject::Kind::Bytes, take(little_endian(take(8))))); break;
        case ')': push(make(PyObject::Kind::Tuple)); break;
        case 't': push(make_sequence(PyObject::Kind::Tuple, pop_mark())); break;
        case 0x85: push(make_sequence(PyObject::Kind::Tuple, pop_n(1))); break;
        case 0x86: push(make_sequence(PyObject::Kind::Tuple, pop_n(2))); break;
        case 0x87: push(make_sequence(PyObject::Kind::Tuple, pop_n(3))); break;
        case ']': case 0x8f: push(make(PyObject::Kind::List)); break;  // EMPTY_LIST, EMPTY_SET
        case 'l': case 0x91: push(make_sequence(PyObject::Kind::List, pop_mark())); break;  // LIST, FROZENSET
        case 'a': {
          PyRef value = pop();
          expect(top(), PyObject::Kind::List, "APPEND")->items.push_back(value);
          break;
        }
        case 'e': case 0x90: {  // APPENDS, ADDITEMS
          std::vector<PyRef> values = pop_mark();
          auto& items = expect(top(), PyObject::Kind::List, "APPENDS")->items;
          items.insert(items.end(), values.begin(), values.end());
          break;
        }
        case '}': push(make(PyObject::Kind::Dict)); break;
        case 'd': {
          auto dict = make(PyObject::Kind::Dict);
          set_items(*dict, pop_mark());
          push(dict);
          break;
        }
        case 's': {
          PyRef value = pop();
          PyRef key = pop();
          set_items(*expect(top(), PyObject::Kind::Dict, "SETITEM"), {key, value});
          break;
        }
        case 'u': {
          std::vector<PyRef> kv = pop_mark();
          set_items(*expect(top(), PyObject::Kind::Dict, "SETITEMS"), kv);
          break;
        }
        case 'p': memo_[static_cast<uint64_t>(parse_int(take_line()))] = top(); break;
        case 'q': memo_[little_endian(take(1))] = top(); break;
        case 'r': memo_[little_endian(take(4))] = top(); break;
        case 0x94: memo_[memo_.size()] = top(); break;  // MEMOIZE
        case 'g': push(memo(static_cast<uint64_t>(parse_int(take_line())))); break;
        case 'h': push(memo(little_endian(take(1)))); break;
        case 'j': push(memo(little_endian(take(4)))); break;
        case '0': pop(); break;
        case '1': pop_mark(); break;
        case '2': push(top()); break;
        case 'c': {
          std::string module = take_line();
          push(make_text(PyObject::Kind::Global, module + "." + take_line()));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          PyRef name = pop();
          PyRef module = pop();
          if (name->kind != PyObject::Kind::Str || module->kind != PyObject::Kind::Str) fail("bad STACK_GLOBAL");
          push(make_text(PyObject::Kind::Global, module->text + "." + name->text));
          break;
        }
        case 'Q': push(persistent_load(pop())); break;  // BINPERSID
        case 'R': {
          PyRef args = pop();
          PyRef callable = pop();
          push(reduce(*expect(callable, PyObject::Kind::Global, "REDUCE"), *expect(args, PyObject::Kind::Tuple, "REDUCE")));
          break;
        }
        case 'b': {  // BUILD: only the OrderedDict's __dict__ (_metadata) and tensor state, both ignorable
          pop();
          const auto kind = top()->kind;
          if (kind != PyObject::Kind::Dict && kind != PyObject::Kind::Tensor) {
            fail(std::string("cannot restore the state of a ") + kind_name(kind));
          }
          break;
        }
        case 0x81: case 0x92: {  // NEWOBJ, NEWOBJ_EX: a class instance
          if (op == 0x92) pop();
          pop();
          PyRef cls = pop();
          unsupported(cls->kind == PyObject::Kind::Global ? cls->text : "instance");
        }
        default: {
          char buf[8];
          std::snprintf(buf, sizeof buf, "0x%02x", op);
          fail(std::string("unsupported pickle opcode ") + buf);
        }
      }
    }
  }

 private:
  [[noreturn]] static void fail(const std::string& why) { throw std::runtime_error(why); }
  [[noreturn]] static void unsupported(const std::string& name) {
    fail("unsupported Python object " + name +
         " (Codefy reads a dict of tensors: save model.state_dict(), not the model)");
  }

  std::string take(uint64_t count) {
    if (count > pkl_.size() - pos_) fail("pickle data ends early");
    std::string out = pkl_.substr(pos_, count);
    pos_ += count;
    return out;
  }
  std::string take_line() {
    size_t eol = pkl_.find('\n', pos_);
    if (eol == std::string::npos) fail("pickle data ends early");
    std::string out = pkl_.substr(pos_, eol - pos_);
    pos_ = eol + 1;
    return out;
  }
  static uint64_t little_endian(const std::string& b) {
    uint64_t v = 0;
    for (size_t i = b.size(); i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[i]);
    return v;
  }
  /// LONG1/LONG4 payload: little-endian two's complement.
  static int64_t long_bytes(const std::string& b) {
    if (b.empty()) return 0;
    if (b.size() > 8) fail("integer too large");
    uint64_t v = little_endian(b);
    if (b.size() < 8 && (static_cast<unsigned char>(b.back()) & 0x80)) v |= ~uint64_t{0} << (8 * b.size());
    return static_cast<int64_t>(v);
  }
  static int64_t parse_int(const std::string& s) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) fail("bad integer '" + s + "'");
    return v;
  }

  static PyRef make(PyObject::Kind kind) {
    auto obj = std::make_shared<PyObject>();
    obj->kind = kind;
    return obj;
  }
  static PyRef make_int(PyObject::Kind kind, int64_t v) {
    auto obj = make(kind);
    obj->int_value = v;
    return obj;
  }
  static PyRef make_text(PyObject::Kind kind, std::string text) {
    auto obj = make(kind);
    obj->text = std::move(text);
    return obj;
  }
  static PyRef make_sequence(PyObject::Kind kind, std::vector<PyRef> items) {
    auto obj = make(kind);
    obj->items = std::move(items);
    return obj;
  }
  static PyRef expect(const PyRef& obj, PyObject::Kind kind, const char* op) {
    if (obj->kind != kind) fail(std::string(op) + " on a " + kind_name(obj->kind));
    return obj;
  }
  static void set_items(PyObject& dict, const std::vector<PyRef>& kv) {
    if (kv.size() % 2 != 0) fail("odd number of dict items");
    for (size_t i = 0; i < kv.size(); i += 2) {
      // A repeated str key replaces the earlier value, as in Python.
      auto same = [&](const std::pair<PyRef, PyRef>& e) {
        return e.first->kind == PyObject::Kind::Str && kv[i]->kind == PyObject::Kind::Str && e.first->text == kv[i]->text;
      };
      auto it = std::find_if(dict.entries.begin(), dict.entries.end(), same);
      if (it != dict.entries.end()) {
        it->second = kv[i + 1];
      } else {
        dict.entries.emplace_back(kv[i], kv[i + 1]);
      }
    }
  }

  void push(PyRef obj) { stack_.push_back(std::move(obj)); }
  PyRef top() {
    if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) fail("pickle stack underflow");
    return stack_.back();
  }
  PyRef pop() {
    PyRef obj = top();
    stack_.pop_back();
    return obj;
  }
  std::vector<PyRef> pop_n(size_t n) {
    std::vector<PyRef> out(n);
    for (size_t i = n; i-- > 0;) out[i] = pop();
    return out;
  }
  std::vector<PyRef> pop_mark() {
    if (marks_.empty()) fail("pickle has no MARK");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<PyRef> out(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return out;
  }
  PyRef memo(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("pickle refers to a missing memo entry");
    return it->second;
  }

  /// ('storage', torch.FloatStorage, key, location, numel) → the bytes of data/<key>.
  PyRef persistent_load(const PyRef& pid) {
    expect(pid, PyObject::Kind::Tuple, "BINPERSID");
    const auto& t = pid->items;
    if (t.size() != 5 || t[0]->kind != PyObject::Kind::Str || t[0]->text != "storage" ||
        t[1]->kind != PyObject::Kind::Global || t[2]->kind != PyObject::Kind::Str) {
      fail("unsupported persistent id");
    }
    const std::string& key = t[2]->text;
    auto cached = storages_.find(key);
    if (cached != storages_.end()) return cached->second;

    std::string type = t[1]->text;
    if (type.rfind("torch.", 0) == 0) type = type.substr(6);
    if (type == "storage.UntypedStorage") type = "UntypedStorage";
    std::optional<at::ScalarType> dtype;
    if (type == "UntypedStorage") dtype = at::kByte;
#define CODEFY_STORAGE_TYPE(_, name) \
  if (type == #name "Storage") dtype = at::k##name;
    AT_FORALL_SCALAR_TYPES_WITH_COMPLEX(CODEFY_STORAGE_TYPE)
#undef CODEFY_STORAGE_TYPE
    if (!dtype) fail("unsupported storage type " + t[1]->text);

    auto [data, size] = reader_.getRecord("data/" + key);
    auto obj = make(PyObject::Kind::Storage);
    obj->dtype = *dtype;
    obj->storage = at::Storage(at::Storage::use_byte_size_t(), size, std::move(data), nullptr, false);
    storages_[key] = obj;
    return obj;
  }

  PyRef reduce(const PyObject& callable, const PyObject& args) {
    const std::string& name = callable.text;
    const auto& a = args.items;
    if (name == "collections.OrderedDict") {
      if (!a.empty()) fail("OrderedDict with constructor arguments");
      return make(PyObject::Kind::Dict);
    }
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      if (a.size() < 4) fail(name + " with too few arguments");
      return make_tensor(*a[0], *a[1], *a[2], *a[3]);
    }
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || a[0]->kind != PyObject::Kind::Tensor) fail(name + " without a tensor");
      return a[0];
    }
    // TorchScript's pickler (torch::pickle_save) tags containers with their
    // static type: restore_type_tag(obj, "Dict[str, Tensor]"), build_intlist(list)...
    if (name == "torch.jit._pickle.restore_type_tag" || name.rfind("torch.jit._pickle.build_", 0) == 0) {
      if (a.empty()) fail(name + " without arguments");
      return a[0];
    }
    unsupported(name);
  }

  static std::vector<int64_t> int_tuple(const PyObject& obj) {
    if (obj.kind != PyObject::Kind::Tuple) fail("tensor size/stride is not a tuple");
    std::vector<int64_t> out;
    for (const auto& item : obj.items) {
      if (item->kind != PyObject::Kind::Int) fail("tensor size/stride holds a non-integer");
      out.push_back(item->int_value);
    }
    return out;
  }

  PyRef make_tensor(const PyObject& storage, const PyObject& offset_obj, const PyObject& size_obj,
                    const PyObject& stride_obj) {
    if (storage.kind != PyObject::Kind::Storage) fail("tensor without a storage");
    if (offset_obj.kind != PyObject::Kind::Int) fail("tensor offset is not an integer");
    const std::vector<int64_t> sizes = int_tuple(size_obj);
    const std::vector<int64_t> strides = int_tuple(stride_obj);
    const int64_t offset = offset_obj.int_value;
    if (sizes.size() != strides.size() || offset < 0) fail("inconsistent tensor geometry");
    // The view must lie inside the storage: a corrupt file must not read past it.
    const uint64_t item_size = c10::elementSize(storage.dtype);
    const uint64_t storage_items = storage.storage.nbytes() / item_size;
    bool empty = false;
    uint64_t last = static_cast<uint64_t>(offset);
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] < 0 || strides[d] < 0 || sizes[d] > (int64_t{1} << 40) || strides[d] > (int64_t{1} << 40)) {
        fail("inconsistent tensor geometry");
      }
      if (sizes[d] == 0) empty = true;
      if (sizes[d] > 0) last += static_cast<uint64_t>(sizes[d] - 1) * static_cast<uint64_t>(strides[d]);
    }
    if (!empty && last >= storage_items) fail("tensor extends past its storage");
    auto obj = make(PyObject::Kind::Tensor);
    obj->tensor = at::empty({0}, at::TensorOptions().dtype(storage.dtype)).set_(storage.storage, offset, sizes, strides);
    if (storage.dtype == at::kBool) check_bools(obj->tensor);
    return obj;
  }

  const std::string& pkl_;
  caffe2::serialize::PyTorchStreamReader& reader_;
  size_t pos_ = 0;
  std::vector<PyRef> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PyRef> memo_;
  std::unordered_map<std::string, PyRef> storages_;
};

/// Reads a torch.save / torch::pickle_save zip into a StateDict.
StateDict load_torch_zip(const std::string& bytes, const fs::path& path) {
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  auto [pkl_data, pkl_size] = reader.getRecord("data.pkl");
  const std::string pkl(static_cast<const char*>(pkl_data.get()), pkl_size);
  PyRef root = PythonUnpickler(pkl, reader).load();
  if (root->kind != PyObject::Kind::Dict) {
    throw std::runtime_error("weights file " + path.string() + " does not hold a dict of tensors (it holds a " +
                             kind_name(root->kind) + ")");
  }
  StateDict out;
  for (const auto& [key, value] : root->entries) {
    if (key->kind != PyObject::Kind::Str) {
      throw std::runtime_error("weights file " + path.string() + " has a non-string key (" + kind_name(key->kind) + ")");
    }
    if (value->kind != PyObject::Kind::Tensor) {
      throw std::runtime_error("weights file " + path.string() + ": entry '" + key->text + "' is a " +
                               kind_name(value->kind) + ", not a tensor (a training checkpoint rather than a state_dict?)");
    }
    out.emplace_back(key->text, value->tensor.contiguous());
  }
  return out;
}

}  // namespace

// -----------------------------------------------------------------------------

StateDict state_dict(const torch::nn::Module& module) {
  StateDict out;
  collect(module, "", out);
  // Detached aliases, as in PyTorch: same storage, no autograd history.
  for (auto& item : out) item.second = item.second.detach();
  return out;
}

void load_state_dict(torch::nn::Module& module, const StateDict& dict) {
  StateDict own;
  collect(module, "", own);
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
      msg += std::string("\n  ") + what + ": ";
      for (size_t i = 0; i < names.size(); ++i) msg += (i ? ", " : "") + names[i];
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

void save_weights(const fs::path& path, const StateDict& dict) {
  if (has_suffix_ci(path.filename().string(), ".safetensors")) {
    const std::string bytes = encode_safetensors(dict);
    util::write_file_atomic(path, bytes);
    return;
  }
  c10::Dict<std::string, at::Tensor> d;
  for (const auto& [name, tensor] : dict) {
    if (d.contains(name)) throw std::invalid_argument("duplicate tensor name '" + name + "'");
    d.insert(name, to_disk(name, tensor));
  }
  std::vector<char> bytes;
  try {
    bytes = torch::pickle_save(c10::IValue(d));
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot serialise weights for " + path.string() + ": " +
                             first_line(e.what_without_backtrace()));
  }
  util::write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

StateDict load_weights(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error("weights file not found: " + path.string());
  if (!fs::is_regular_file(path, ec)) throw std::runtime_error("weights path is not a file: " + path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open weights file: " + path.string());
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("read error in weights file: " + path.string());

  if (bytes.size() >= 4 && bytes.compare(0, 4, "PK\x03\x04") == 0) {
    // torch.save's zip container (also what pickle_save writes).
    try {
      return load_torch_zip(bytes, path);
    } catch (const c10::Error& e) {
      throw std::runtime_error("cannot read PyTorch weights file " + path.string() + ": " +
                               first_line(e.what_without_backtrace()));
    } catch (const std::exception& e) {
      const std::string why = e.what();
      // Errors about the content already name the path.
      if (why.find(path.string()) != std::string::npos) throw std::runtime_error(why);
      throw std::runtime_error("cannot read PyTorch weights file " + path.string() + ": " + first_line(why));
    }
  }
  if (bytes.size() >= 9 && bytes[8] == '{') return decode_safetensors(bytes, path.string());
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) {
    throw std::runtime_error("weights file " + path.string() +
                             " uses PyTorch's legacy (pre-1.6) format; re-save it with a current torch.save");
  }
  throw std::runtime_error("not a PyTorch (.pt/.pth) or safetensors weights file: " + path.string());
}

std::string encode_safetensors(const StateDict& dict) {
  // Header order = data order = dict order, so the file mirrors the state_dict.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<at::Tensor> tensors;
  tensors.reserve(dict.size());
  uint64_t offset = 0;
  for (const auto& [name, tensor] : dict) {
    if (name == "__metadata__") throw std::invalid_argument("'__metadata__' is reserved in safetensors");
    if (header.contains(name)) throw std::invalid_argument("duplicate tensor name '" + name + "'");
    at::Tensor t = to_disk(name, tensor);
    const uint64_t nbytes = t.nbytes();
    header[name] = {{"dtype", safetensors_dtype(name, t.scalar_type())},
                    {"shape", t.sizes().vec()},
                    {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    tensors.push_back(std::move(t));
  }
  std::string json = header.dump();
  // The reference implementation pads with spaces so the data starts 8-aligned.
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + json.size() + offset);
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += json;
  for (const at::Tensor& t : tensors) out.append(static_cast<const char*>(t.data_ptr()), t.nbytes());
  return out;
}

StateDict decode_safetensors(const std::string& bytes, const std::string& source) {
  auto fail = [&source](const std::string& why) {
    return std::runtime_error("invalid safetensors file " + source + ": " + why);
  };
  if (bytes.size() < 8) throw fail("shorter than its 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  // The reference reader caps the header at 100 MB too.
  if (n > 100'000'000 || n > bytes.size() - 8) throw fail("header length " + std::to_string(n) + " exceeds the file");

  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw fail("header is not a JSON object");
  const uint64_t data_size = bytes.size() - 8 - n;
  const char* data = bytes.data() + 8 + n;

  struct Entry {
    uint64_t begin;
    std::string name;
    at::Tensor tensor;
  };
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    try {
      const std::string dtype = info.at("dtype").get<std::string>();
      auto type = scalar_type_of(dtype);
      if (!type) throw fail("tensor '" + name + "' has unsupported dtype " + dtype);
      std::vector<int64_t> shape;
      uint64_t numel = 1;
      for (const auto& d : info.at("shape")) {
        const uint64_t dim = d.get<uint64_t>();
        // Overflow guard: no real tensor comes near 2^48 elements.
        if (dim > (uint64_t{1} << 48) || (dim > 0 && numel > (uint64_t{1} << 48) / dim)) {
          throw fail("tensor '" + name + "' is too large");
        }
        numel *= dim;
        shape.push_back(static_cast<int64_t>(dim));
      }
      const auto& offsets = info.at("data_offsets");
      if (!offsets.is_array() || offsets.size() != 2) throw fail("tensor '" + name + "' has bad data_offsets");
      const uint64_t begin = offsets[0].get<uint64_t>();
      const uint64_t end = offsets[1].get<uint64_t>();
      const uint64_t expected = numel * c10::elementSize(*type);
      if (begin > end || end > data_size) {
        throw fail("tensor '" + name + "' data [" + std::to_string(begin) + ", " + std::to_string(end) +
                   ") lies outside the " + std::to_string(data_size) + " data bytes (truncated?)");
      }
      if (end - begin != expected) {
        throw fail("tensor '" + name + "' has " + std::to_string(end - begin) + " bytes, its shape needs " +
                   std::to_string(expected));
      }
      at::Tensor t = torch::empty(shape, at::TensorOptions().dtype(*type));
      if (expected > 0) std::memcpy(t.data_ptr(), data + begin, expected);
      if (*type == at::kBool && t.numel() > 0 && t.view(at::kByte).gt(1).any().item<bool>()) {
        throw fail("bool tensor '" + name + "' holds bytes other than 0 and 1");
      }
      entries.push_back({begin, name, std::move(t)});
    } catch (const nlohmann::json::exception& e) {
      throw fail("bad header entry for '" + name + "' (" + e.what() + ")");
    }
  }
  // Data order is the writer's order (ours: the state_dict order).
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  StateDict out;
  out.reserve(entries.size());
  for (auto& e : entries) out.emplace_back(std::move(e.name), std::move(e.tensor));
  return out;
}

}  // namespace codefy::train
