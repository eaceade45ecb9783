// Writing the plain format (plain_format.hpp): one walk over the object that checks each value's
// type and writes it, giving up (and undoing what it wrote) at the first value that is not plain.

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <unordered_set>
#include <utility>

#include "plain_format.hpp"

namespace ranks::python {

static_assert(std::endian::native == std::endian::little,
              "the plain format is little-endian, and written as the host's memory");

namespace {

constexpr uint64_t kMaxCount = std::numeric_limits<uint32_t>::max();

// Appends to a byte vector without resizing it for each addition: it grows to its capacity, then
// by doubling, and is cut to what was written at the end.
class Output {
 public:
  explicit Output(std::vector<uint8_t>& out) : out_(out), used_(out.size()) {}
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  size_t used() const { return used_; }
  void cut_to(size_t used) { used_ = used; }
  void finish() { out_.resize(used_); }

  void byte(uint8_t value) { *room(1) = value; }
  void bytes(const void* data, size_t count) {
    if (count > 0) std::memcpy(room(count), data, count);
  }
  template <class T>
  void number(T value) {
    std::memcpy(room(sizeof value), &value, sizeof value);
  }
  // A length or count, which the format carries as u32 (callers check it fits).
  void count(uint64_t value) { number(static_cast<uint32_t>(value)); }
  uint8_t* room(size_t count) {
    if (out_.size() - used_ < count) {  // the room reserved first, then twice as much
      out_.resize(std::max({out_.capacity(), out_.size() * 2, used_ + count, size_t{4096}}));
    }
    uint8_t* at = out_.data() + used_;
    used_ += count;
    return at;
  }

 private:
  std::vector<uint8_t>& out_;
  size_t used_;
};

bool write_int(PyObject* value, Output& out) {
  int overflow = 0;
  const long long small = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow == 0) {
    if (small >= std::numeric_limits<int32_t>::min() &&
        small <= std::numeric_limits<int32_t>::max()) {
      out.byte('i');
      out.number(static_cast<int32_t>(small));
    } else {
      out.byte('q');
      out.number(static_cast<int64_t>(small));
    }
    return true;
  }
  const size_t bits = _PyLong_NumBits(value);
  if (bits == static_cast<size_t>(-1) || bits / 8 + 1 > kMaxCount) {
    PyErr_Clear();
    return false;
  }
  const size_t count = bits / 8 + 1;  // room for the sign bit
  out.byte('l');
  out.count(count);
  if (_PyLong_AsByteArray(reinterpret_cast<PyLongObject*>(value), out.room(count), count,
                          /*little_endian=*/1, /*is_signed=*/1) != 0) {
    PyErr_Clear();
    return false;
  }
  return true;
}

bool write_str(PyObject* value, Output& out) {
  if (PyUnicode_READY(value) != 0) {  // a str made by the legacy API, not yet in its final form
    PyErr_Clear();
    return false;
  }
  if (PyUnicode_IS_ASCII(value)) {
    const auto length = static_cast<uint64_t>(PyUnicode_GET_LENGTH(value));
    if (length <= std::numeric_limits<uint8_t>::max()) {
      out.byte('s');
      out.byte(static_cast<uint8_t>(length));
    } else if (length <= kMaxCount) {
      out.byte('S');
      out.count(length);
    } else {
      return false;
    }
    out.bytes(PyUnicode_DATA(value), length);
    return true;
  }
  // Encoded apart, not through PyUnicode_AsUTF8, which would keep the UTF-8 on the caller's str.
  PyObject* encoded = PyUnicode_AsEncodedString(value, "utf-8", "surrogatepass");
  if (encoded == nullptr) {
    PyErr_Clear();
    return false;
  }
  const auto length = static_cast<uint64_t>(PyBytes_GET_SIZE(encoded));
  const bool fits = length <= kMaxCount;
  if (fits) {
    out.byte('u');
    out.count(length);
    out.bytes(PyBytes_AS_STRING(encoded), length);
  }
  Py_DECREF(encoded);
  return fits;
}

// Writes a value that is not a container; false when it is not a plain one (or a container).
bool write_leaf(PyObject* value, Output& out) {
  if (value == Py_None) {
    out.byte('N');
  } else if (value == Py_True) {
    out.byte('T');
  } else if (value == Py_False) {
    out.byte('F');
  } else if (PyLong_CheckExact(value)) {
    return write_int(value, out);
  } else if (PyUnicode_CheckExact(value)) {
    return write_str(value, out);
  } else if (PyFloat_CheckExact(value)) {
    out.byte('g');
    out.number(PyFloat_AS_DOUBLE(value));
  } else if (PyBytes_CheckExact(value)) {
    const auto length = static_cast<uint64_t>(PyBytes_GET_SIZE(value));
    if (length > kMaxCount) return false;
    out.byte('b');
    out.count(length);
    out.bytes(PyBytes_AS_STRING(value), length);
  } else if (PyComplex_CheckExact(value)) {
    const Py_complex number = PyComplex_AsCComplex(value);
    out.byte('y');
    out.number(number.real);
    out.number(number.imag);
  } else {
    return false;
  }
  return true;
}

// The tag and item count of a plain container, or tag 0 for anything else.
std::pair<uint8_t, Py_ssize_t> container_of(PyObject* value) {
  if (PyDict_CheckExact(value)) return {'{', PyDict_GET_SIZE(value)};
  if (PyList_CheckExact(value)) return {'[', PyList_GET_SIZE(value)};
  if (PyTuple_CheckExact(value)) return {'(', PyTuple_GET_SIZE(value)};
  if (PySet_CheckExact(value)) return {'<', PySet_GET_SIZE(value)};
  if (PyFrozenSet_CheckExact(value)) return {'>', PySet_GET_SIZE(value)};
  return {0, 0};
}

// The walk holds the open containers, each with its position (at most kMaxPlainDepth of them),
// not a list of values still to visit: a 10,000-entry dict would need a fresh block of that size
// every call. Nothing here runs Python code (the containers are exact built-ins, read through
// their own iteration, and nothing is hashed or compared), so none changes under the walk.
class Walk {
 public:
  explicit Walk(Output& out) : out_(out) {}

  bool run(PyObject* root) {
    if (!visit(root)) return false;
    while (!open_.empty()) {
      Open& top = open_.back();
      PyObject* next = nullptr;
      if (top.pending_value != nullptr) {  // a dict's value, after its key
        next = std::exchange(top.pending_value, nullptr);
      } else if (top.tag == '{') {
        PyObject* key = nullptr;
        if (PyDict_Next(top.container, &top.position, &key, &top.pending_value)) next = key;
      } else if (top.tag == '[' || top.tag == '(') {
        if (top.position < PySequence_Fast_GET_SIZE(top.container)) {
          next = PySequence_Fast_ITEMS(top.container)[top.position++];
        }
      } else {
        Py_hash_t hash = 0;
        _PySet_NextEntry(top.container, &top.position, &next, &hash);
      }
      if (next == nullptr) {
        open_.pop_back();
      } else if (!visit(next)) {  // may open a container: `top` is not used after it
        return false;
      }
    }
    return true;
  }

 private:
  struct Open {
    PyObject* container;
    uint8_t tag;
    Py_ssize_t position = 0;
    PyObject* pending_value = nullptr;
  };

  bool visit(PyObject* value) {
    if (write_leaf(value, out_)) return true;
    const auto [tag, count] = container_of(value);
    if (tag == 0 || open_.size() >= static_cast<size_t>(kMaxPlainDepth) ||
        static_cast<uint64_t>(count) > kMaxCount) {
      return false;
    }
    // A container referenced once cannot be reached twice. An empty tuple or frozenset holds
    // nothing to share (CPython has one empty tuple, which every `()` is).
    const bool holds_nothing = count == 0 && (tag == '(' || tag == '>');
    if (!holds_nothing && Py_REFCNT(value) > 1 && !seen_.insert(value).second) return false;
    out_.byte(tag);
    out_.count(static_cast<uint64_t>(count));
    if (count > 0) open_.push_back({value, tag});
    return true;
  }

  Output& out_;
  std::vector<Open> open_;
  std::unordered_set<PyObject*> seen_;
};

}  // namespace

bool write_plain(PyObject* value, std::vector<uint8_t>& out) {
  Output output(out);
  const size_t start = output.used();
  const bool plain = Walk(output).run(value);
  if (!plain) output.cut_to(start);
  output.finish();
  return plain;
}

}  // namespace ranks::python
