// Reading Python's zip-format torch.save files (and torch::pickle_save's) into a StateDict.
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
// its storage, the zip's declared sizes are checked against the file's size
// before anything is inflated, and the objects a pickle builds are bounded in
// number and nesting and owned by the unpickler (an arena), so cycles cannot
// leak and freeing never recurses.
#include "train/pickle_reader.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace codefy::train {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "PyTorch's tensor data is little-endian; a big-endian host needs byte swapping");

namespace {

/// A bool tensor read from a file must hold only 0 and 1: any other byte is
/// undefined behaviour in C++ code that reads it.
void check_bools(const at::Tensor& t) {
  if (t.numel() > 0 && t.view(at::kByte).gt(1).any().item<bool>()) {
    throw std::runtime_error("bool tensor holds bytes other than 0 and 1");
  }
}

struct PyObject;
/// Objects refer to each other by plain pointers: the unpickler's arena owns
/// them all, so a pickle that makes a list contain itself (a cycle) or nests
/// a million levels deep is freed in one flat pass when the unpickler goes.
using PyRef = PyObject*;

/// A Python value, as much of one as a state_dict needs.
struct PyObject {
  enum class Kind { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;
  at::ScalarType dtype = at::kByte;
  /// Container nesting when built (0 for scalars): what the depth limit checks.
  uint32_t depth = 0;
  int64_t int_value = 0;
  double float_value = 0;
  std::string text;  // Str, Bytes; "module.name" for Global
  std::vector<PyRef> items;
  std::vector<std::pair<PyRef, PyRef>> entries;
  /// Dict: str key -> index in entries, so a dict of n keys builds in O(n).
  std::unique_ptr<std::unordered_map<std::string, size_t>> str_keys;
  at::Storage storage;
  at::Tensor tensor;
};

/// Containers nested deeper than this are refused: a state_dict nests about
/// four levels, and nothing downstream should meet a deeper structure.
constexpr uint32_t kMaxPickleDepth = 1000;
/// Objects (and stack or memo slots) one pickle may create, about 150 bytes
/// each: 1M allows some 40k tensors and keeps a hostile pickle's memory to
/// a few hundred MB whatever its size.
constexpr size_t kMaxPickleObjects = size_t{1} << 20;
/// A pickle that built more objects than this is followed by malloc_trim.
constexpr size_t kTrimAfterObjects = size_t{1} << 16;

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
  PythonUnpickler(std::string_view pkl, caffe2::serialize::PyTorchStreamReader& reader) : pkl_(pkl), reader_(reader) {}
  PythonUnpickler(const PythonUnpickler&) = delete;
  PythonUnpickler& operator=(const PythonUnpickler&) = delete;
  /// Frees the objects (one flat pass, whatever they point at) and, after a
  /// large pickle, hands the freed heap pages back: its many small blocks
  /// would otherwise keep the process's RSS up by up to ~150 MB.
  ~PythonUnpickler() {
    const bool large = objects_.size() > kTrimAfterObjects;
    std::deque<PyObject>().swap(objects_);
    std::vector<PyRef>().swap(stack_);
    std::unordered_map<uint64_t, PyRef>().swap(memo_);
#ifdef __GLIBC__
    if (large) malloc_trim(0);
#else
    (void)large;
#endif
  }

  PyRef load() {
    while (true) {
      const auto op = static_cast<unsigned char>(take(1)[0]);
      switch (op) {
        case 0x80: take(1); break;  // PROTO
        case 0x95: take(8); break;  // FRAME: the whole pickle is in memory
        case '(':                   // MARK
          if (marks_.size() >= kMaxPickleObjects) too_many();
          marks_.push_back(stack_.size());
          break;
        case '.': {  // STOP
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
        case ']':
        case 0x8f: push(make(PyObject::Kind::List)); break;  // EMPTY_LIST, EMPTY_SET
        case 'l':
        case 0x91: push(make_sequence(PyObject::Kind::List, pop_mark())); break;  // LIST, FROZENSET
        case 'a': {
          PyRef value = pop();
          PyRef list = expect(top(), PyObject::Kind::List, "APPEND");
          list->items.push_back(value);
          contain(*list, *value);
          break;
        }
        case 'e':
        case 0x90: {  // APPENDS, ADDITEMS
          std::vector<PyRef> values = pop_mark();
          PyRef list = expect(top(), PyObject::Kind::List, "APPENDS");
          list->items.insert(list->items.end(), values.begin(), values.end());
          for (PyRef value : values) contain(*list, *value);
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
        case 'p': put_memo(static_cast<uint64_t>(parse_int(take_line()))); break;
        case 'q': put_memo(little_endian(take(1))); break;
        case 'r': put_memo(little_endian(take(4))); break;
        case 0x94: put_memo(memo_.size()); break;  // MEMOIZE
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
          push(reduce(*expect(callable, PyObject::Kind::Global, "REDUCE"),
                      *expect(args, PyObject::Kind::Tuple, "REDUCE")));
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
        case 0x81:
        case 0x92: {  // NEWOBJ, NEWOBJ_EX: a class instance
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
    std::string out(pkl_.substr(pos_, count));
    pos_ += count;
    return out;
  }
  std::string take_line() {
    size_t eol = pkl_.find('\n', pos_);
    if (eol == std::string::npos) fail("pickle data ends early");
    std::string out(pkl_.substr(pos_, eol - pos_));
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

  /// A new object in the arena; past kMaxPickleObjects the pickle is refused.
  PyRef make(PyObject::Kind kind) {
    if (objects_.size() >= kMaxPickleObjects) too_many();
    PyObject& obj = objects_.emplace_back();
    obj.kind = kind;
    return &obj;
  }
  PyRef make_int(PyObject::Kind kind, int64_t v) {
    auto obj = make(kind);
    obj->int_value = v;
    return obj;
  }
  PyRef make_text(PyObject::Kind kind, std::string text) {
    auto obj = make(kind);
    obj->text = std::move(text);
    return obj;
  }
  PyRef make_sequence(PyObject::Kind kind, std::vector<PyRef> items) {
    auto obj = make(kind);
    obj->items = std::move(items);
    obj->depth = 1;
    for (PyRef item : obj->items) contain(*obj, *item);
    return obj;
  }
  [[noreturn]] static void too_many() {
    fail("pickle builds more than " + std::to_string(kMaxPickleObjects) + " objects");
  }
  /// Records that `container` holds `item`, refusing nesting past the limit.
  /// The depth is the nesting when each container was filled (pickles build
  /// inside out, so that is the usual case); a container deepened after it
  /// was put in another (through the memo) does not update its holders.
  /// That is safe: nothing here walks the structure recursively and the
  /// object cap bounds its size; the limit's job is to refuse the plainly
  /// hostile file with a clear message.
  static void contain(PyObject& container, const PyObject& item) {
    container.depth = std::max(container.depth, item.depth + 1);
    if (container.depth > kMaxPickleDepth) {
      fail("pickle nests containers more than " + std::to_string(kMaxPickleDepth) + " levels deep");
    }
  }
  static PyRef expect(PyRef obj, PyObject::Kind kind, const char* op) {
    if (obj->kind != kind) fail(std::string(op) + " on a " + kind_name(obj->kind));
    return obj;
  }
  static void set_items(PyObject& dict, const std::vector<PyRef>& kv) {
    if (kv.size() % 2 != 0) fail("odd number of dict items");
    dict.depth = std::max<uint32_t>(dict.depth, 1);
    for (size_t i = 0; i < kv.size(); i += 2) {
      contain(dict, *kv[i]);
      contain(dict, *kv[i + 1]);
      // A repeated str key replaces the earlier value, as in Python.
      if (kv[i]->kind == PyObject::Kind::Str) {
        if (!dict.str_keys) dict.str_keys = std::make_unique<std::unordered_map<std::string, size_t>>();
        auto [it, added] = dict.str_keys->emplace(kv[i]->text, dict.entries.size());
        if (!added) {
          dict.entries[it->second].second = kv[i + 1];
          continue;
        }
      }
      dict.entries.emplace_back(kv[i], kv[i + 1]);
    }
  }

  void push(PyRef obj) {
    if (stack_.size() >= kMaxPickleObjects) too_many();
    stack_.push_back(obj);
  }
  void put_memo(uint64_t key) {
    PyRef value = top();
    if (memo_.size() >= kMaxPickleObjects && memo_.count(key) == 0) too_many();
    memo_[key] = value;
  }
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
    obj->tensor =
        at::empty({0}, at::TensorOptions().dtype(storage.dtype)).set_(storage.storage, offset, sizes, strides);
    if (storage.dtype == at::kBool) check_bools(obj->tensor);
    return obj;
  }

  std::string_view pkl_;
  caffe2::serialize::PyTorchStreamReader& reader_;
  size_t pos_ = 0;
  /// Owns every object the pickle built; a deque keeps their addresses.
  std::deque<PyObject> objects_;
  std::vector<PyRef> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PyRef> memo_;
  std::unordered_map<std::string, PyRef> storages_;
};

/// How much the zip's entries may declare, all together, relative to the
/// file: torch.save stores entries uncompressed, so a real file declares
/// about its own size; a little more leaves room for a re-zipped (deflated)
/// one. Beyond it the file is refused before anything is allocated.
constexpr uint64_t kMaxZipInflation = 8;
constexpr uint64_t kZipInflationSlack = uint64_t{1} << 20;

uint64_t zip_le(const std::string& b, size_t pos, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(b[pos + i]);
  return v;
}

std::string mib_text(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

/// Reads the zip's central directory as miniz (inside PyTorchStreamReader)
/// does, and refuses the file if the entries' declared sizes are
/// inconsistent or add up to more than kMaxZipInflation times the file
/// (plus kZipInflationSlack). PyTorchStreamReader allocates each record it
/// reads at its declared size and miniz never inflates past it (an entry
/// that inflates to more than it declares fails), so after this check a
/// small file cannot make the reader allocate much more than itself.
void check_zip_sizes(const std::string& bytes, const std::string& source) {
  auto refuse = [&source](const std::string& why) {
    throw std::runtime_error("weights file " + source + " is not a usable zip: " + why);
  };
  // The end-of-central-directory record: its last occurrence, as miniz finds it.
  constexpr size_t kEocd = 22;
  if (bytes.size() < kEocd) refuse("too short");
  const size_t search_from = bytes.size() > kEocd + 0xFFFF ? bytes.size() - kEocd - 0xFFFF : 0;
  size_t eocd = std::string::npos;
  for (size_t pos = bytes.size() - kEocd + 1; pos-- > search_from;) {
    if (zip_le(bytes, pos, 4) == 0x06054b50) {
      eocd = pos;
      break;
    }
  }
  if (eocd == std::string::npos) refuse("no end of central directory");
  uint64_t count = zip_le(bytes, eocd + 10, 2);
  uint64_t dir_size = zip_le(bytes, eocd + 12, 4);
  uint64_t dir_offset = zip_le(bytes, eocd + 16, 4);
  // Zip64: a locator just before the record points at the 64-bit record.
  if (eocd >= 20 && zip_le(bytes, eocd - 20, 4) == 0x07064b50) {
    const uint64_t z64 = zip_le(bytes, eocd - 20 + 8, 8);
    if (z64 > bytes.size() || bytes.size() - z64 < 56 || zip_le(bytes, z64, 4) != 0x06064b50) {
      refuse("damaged zip64 end of central directory");
    }
    count = zip_le(bytes, z64 + 32, 8);
    dir_size = zip_le(bytes, z64 + 40, 8);
    dir_offset = zip_le(bytes, z64 + 48, 8);
  }
  if (dir_offset > bytes.size() || dir_size > bytes.size() - dir_offset) refuse("central directory out of range");

  const uint64_t file_size = bytes.size();
  const uint64_t limit = file_size * kMaxZipInflation + kZipInflationSlack;
  uint64_t total = 0;
  size_t pos = static_cast<size_t>(dir_offset);
  const size_t dir_end = static_cast<size_t>(dir_offset + dir_size);
  for (uint64_t i = 0; i < count; ++i) {
    constexpr size_t kHeader = 46;
    if (dir_end - pos < kHeader || zip_le(bytes, pos, 4) != 0x02014b50) refuse("damaged central directory");
    const uint64_t method = zip_le(bytes, pos + 10, 2);
    uint64_t compressed = zip_le(bytes, pos + 20, 4);
    uint64_t size = zip_le(bytes, pos + 24, 4);
    const uint64_t offset32 = zip_le(bytes, pos + 42, 4);
    const size_t name_len = zip_le(bytes, pos + 28, 2);
    const size_t extra_len = zip_le(bytes, pos + 30, 2);
    const size_t comment_len = zip_le(bytes, pos + 32, 2);
    if (dir_end - pos - kHeader < name_len + extra_len + comment_len) refuse("damaged central directory");
    // The entry's name for messages: at most 200 bytes, printable ASCII.
    std::string name = bytes.substr(pos + kHeader, std::min<size_t>(name_len, 200));
    for (char& c : name) {
      if (c < 0x20 || c > 0x7e) c = '?';
    }
    // Sizes of 0xFFFFFFFF are in the zip64 extra field (id 1), in this order.
    constexpr uint64_t k32 = 0xFFFFFFFF;
    if (size == k32 || compressed == k32 || offset32 == k32) {
      bool found = false;
      for (size_t e = pos + kHeader + name_len, end = e + extra_len; end - e >= 4;) {
        const uint64_t id = zip_le(bytes, e, 2);
        const size_t len = zip_le(bytes, e + 2, 2);
        if (end - e - 4 < len) break;
        if (id == 1) {
          size_t f = e + 4;
          const size_t needed = size_t{8} * ((size == k32) + (compressed == k32) + (offset32 == k32));
          if (len < needed) break;
          if (size == k32) {
            size = zip_le(bytes, f, 8);
            f += 8;
          }
          if (compressed == k32) compressed = zip_le(bytes, f, 8);
          found = true;
          break;
        }
        e += 4 + len;
      }
      if (!found) refuse("entry '" + name + "' lacks its zip64 sizes");
    }
    if (method != 0 && method != 8) refuse("entry '" + name + "' uses an unsupported compression method");
    if (method == 0 && compressed != size) refuse("stored entry '" + name + "' declares two different sizes");
    if (compressed > file_size) refuse("entry '" + name + "' is larger than the file");
    if (size > limit - std::min(total, limit)) {
      throw std::runtime_error("weights file " + source + " (" + mib_text(file_size) + ") declares more data than " +
                               std::to_string(kMaxZipInflation) + " times its size (entry '" + name +
                               "': " + mib_text(size) + "): refused as a zip bomb or a damaged file");
    }
    total += size;
    pos += kHeader + name_len + extra_len + comment_len;
  }
}

}  // namespace

StateDict read_torch_zip(const std::string& bytes, const std::string& source) {
  check_zip_sizes(bytes, source);
  std::istringstream in(bytes);
  caffe2::serialize::PyTorchStreamReader reader(&in);
  auto [pkl_data, pkl_size] = reader.getRecord("data.pkl");
  // The unpickler owns every object it built (root included) until it goes
  // out of scope at the end of this function.
  PythonUnpickler unpickler(std::string_view(static_cast<const char*>(pkl_data.get()), pkl_size), reader);
  PyRef root = unpickler.load();
  if (root->kind != PyObject::Kind::Dict) {
    throw std::runtime_error("weights file " + source + " does not hold a dict of tensors (it holds a " +
                             kind_name(root->kind) + ")");
  }
  StateDict out;
  for (const auto& [key, value] : root->entries) {
    if (key->kind != PyObject::Kind::Str) {
      throw std::runtime_error("weights file " + source + " has a non-string key (" + kind_name(key->kind) + ")");
    }
    if (value->kind != PyObject::Kind::Tensor) {
      throw std::runtime_error("weights file " + source + ": entry '" + key->text + "' is a " + kind_name(value->kind) +
                               ", not a tensor (a training checkpoint rather than a state_dict?)");
    }
    out.emplace_back(key->text, value->tensor.contiguous());
  }
  return out;
}

}  // namespace codefy::train
