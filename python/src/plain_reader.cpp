// Reading the plain format (plain_format.hpp) from a peer: one pass that checks each value as it
// makes it. Containers are made with their announced size (lists and tuples filled in place,
// dicts presized) once the bytes left can hold their items; a container is handed to its parent
// only when complete, so no Python code (a hash, an equality) ever sees one half made.

#include <cstring>
#include <string>

#include "plain_format.hpp"

namespace ranks::python {

namespace {

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader() {
    for (Open& open : open_) {
      Py_XDECREF(open.key);
      Py_DECREF(open.container);
    }
  }

  PyObject* run(std::string& problem) {
    PyObject* root = nullptr;
    while (root == nullptr) {
      const size_t started = at_;
      PyObject* value = nullptr;
      const Read read = read_value(value);
      if (read == Read::Failed || (read == Read::Made && !place(value, started, root))) break;
    }
    if (root != nullptr && at_ != in_.size()) {
      Py_CLEAR(root);
      problem_ = std::to_string(in_.size() - at_) + " bytes after its value";
    }
    if (root == nullptr) problem = problem_;
    return root;
  }

 private:
  // A container being filled: `items` values in all (twice its entries for a dict), `filled` of
  // them placed; `key`, a dict's key waiting for its value.
  struct Open {
    PyObject* container;
    uint8_t tag;
    uint64_t items;
    uint64_t filled = 0;
    PyObject* key = nullptr;
  };

  // What reading one value gave: the value, a container opened (its items come next), or a
  // problem.
  enum class Read { Made, Opened, Failed };

  size_t left() const { return in_.size() - at_; }

  Read fail(std::string problem) {
    PyErr_Clear();
    problem_ = std::move(problem);
    return Read::Failed;
  }
  // Turns the Python error a constructor raised for the value at byte `at` into the problem.
  Read python_failed(size_t at) {
    std::string what = "a value CPython refused";
    PyObject* type = nullptr;
    PyObject* error = nullptr;
    PyObject* traceback = nullptr;
    PyErr_Fetch(&type, &error, &traceback);
    if (error != nullptr) {
      if (PyObject* text = PyObject_Str(error)) {
        if (const char* utf8 = PyUnicode_AsUTF8(text)) what = utf8;
        Py_DECREF(text);
      }
    }
    Py_XDECREF(type);
    Py_XDECREF(error);
    Py_XDECREF(traceback);
    return fail("has a value CPython refused at byte " + std::to_string(at) + ": " + what);
  }
  Read made(PyObject* made, PyObject*& value, size_t started) {
    if (made == nullptr) return python_failed(started);
    value = made;
    return Read::Made;
  }

  template <class T>
  bool take(T& value) {
    if (left() < sizeof value) {
      fail("ends early at byte " + std::to_string(at_));
      return false;
    }
    std::memcpy(&value, in_.data() + at_, sizeof value);
    at_ += sizeof value;
    return true;
  }
  // The next n bytes, which must be there; null if they are not.
  const char* take_bytes(uint64_t n) {
    if (left() < n) {
      fail("announces " + std::to_string(n) + " bytes at byte " + std::to_string(at_) + " with " +
           std::to_string(left()) + " left");
      return nullptr;
    }
    const char* bytes = reinterpret_cast<const char*>(in_.data()) + at_;
    at_ += n;
    return bytes;
  }

  Read read_value(PyObject*& value) {
    const size_t started = at_;
    uint8_t tag = 0;
    if (!take(tag)) return Read::Failed;
    switch (tag) {
      case 'N': return made(Py_NewRef(Py_None), value, started);
      case 'T': return made(Py_NewRef(Py_True), value, started);
      case 'F': return made(Py_NewRef(Py_False), value, started);
      case 'i': {
        int32_t number = 0;
        if (!take(number)) return Read::Failed;
        return made(PyLong_FromLong(number), value, started);
      }
      case 'q': {
        int64_t number = 0;
        if (!take(number)) return Read::Failed;
        return made(PyLong_FromLongLong(number), value, started);
      }
      case 'g': {
        double number = 0;
        if (!take(number)) return Read::Failed;
        return made(PyFloat_FromDouble(number), value, started);
      }
      case 'y': {
        Py_complex number{};
        if (!take(number.real) || !take(number.imag)) return Read::Failed;
        return made(PyComplex_FromCComplex(number), value, started);
      }
      case 's': {
        uint8_t length = 0;
        if (!take(length)) return Read::Failed;
        return text(length, value, started, PyUnicode_DecodeASCII, "strict");
      }
      case 'S':
      case 'u':
      case 'b':
      case 'l':
      case '(':
      case '[':
      case '{':
      case '<':
      case '>':
        break;
      default:
        return fail("has type code " + std::to_string(tag) + " at byte " +
                    std::to_string(started) + ", which no plain value is written with");
    }
    uint32_t count = 0;
    if (!take(count)) return Read::Failed;
    switch (tag) {
      case 'S': return text(count, value, started, PyUnicode_DecodeASCII, "strict");
      case 'u': return text(count, value, started, PyUnicode_DecodeUTF8, "surrogatepass");
      case 'b': {
        const char* bytes = take_bytes(count);
        if (bytes == nullptr) return Read::Failed;
        return made(PyBytes_FromStringAndSize(bytes, count), value, started);
      }
      case 'l': {
        const char* bytes = take_bytes(count);
        if (bytes == nullptr) return Read::Failed;
        return made(_PyLong_FromByteArray(reinterpret_cast<const unsigned char*>(bytes), count,
                                          /*little_endian=*/1, /*is_signed=*/1),
                    value, started);
      }
      default: return open(tag, count, value, started);
    }
  }

  template <class Decode>
  Read text(uint64_t length, PyObject*& value, size_t started, Decode decode, const char* errors) {
    const char* bytes = take_bytes(length);
    if (bytes == nullptr) return Read::Failed;
    return made(decode(bytes, static_cast<Py_ssize_t>(length), errors), value, started);
  }

  Read open(uint8_t tag, uint32_t count, PyObject*& value, size_t started) {
    if (open_.size() >= static_cast<size_t>(kMaxPlainDepth)) {
      return fail("nests containers more than " + std::to_string(kMaxPlainDepth) +
                  " deep at byte " + std::to_string(started));
    }
    const uint64_t items = tag == '{' ? uint64_t{2} * count : count;
    // Every item still owed takes a byte at least: this container's own, and those the
    // containers around it wait for after the one each is filling now (this container or one
    // around it).
    const uint64_t after = owed_ - open_.size();
    if (items + after > left()) {
      return fail("announces a container of " + std::to_string(count) + " items at byte " +
                  std::to_string(started) + " with " + std::to_string(left()) + " bytes left");
    }
    PyObject* container = nullptr;
    switch (tag) {
      case '(': container = PyTuple_New(count); break;
      case '[': container = PyList_New(count); break;
      case '{': container = _PyDict_NewPresized(count); break;
      case '<': container = PySet_New(nullptr); break;
      default: container = PyFrozenSet_New(nullptr); break;
    }
    if (container == nullptr || count == 0) return made(container, value, started);
    open_.push_back({container, tag, items});
    owed_ += items;
    return Read::Opened;
  }

  // Puts a complete value (owned) into the innermost open container, and that container into
  // its parent when it is complete, and so on; root is set when the outermost completes (or
  // value is the whole stream's). False on a problem.
  bool place(PyObject* value, size_t started, PyObject*& root) {
    while (!open_.empty()) {
      Open& top = open_.back();
      int status = 0;
      switch (top.tag) {
        case '(': PyTuple_SET_ITEM(top.container, static_cast<Py_ssize_t>(top.filled), value); break;
        case '[': PyList_SET_ITEM(top.container, static_cast<Py_ssize_t>(top.filled), value); break;
        case '{':
          if (top.key == nullptr) {
            top.key = value;
          } else {
            status = PyDict_SetItem(top.container, top.key, value);
            Py_CLEAR(top.key);
            Py_DECREF(value);
          }
          break;
        default:
          status = PySet_Add(top.container, value);
          Py_DECREF(value);
          break;
      }
      if (status != 0) {
        python_failed(started);
        return false;
      }
      --owed_;
      if (++top.filled < top.items) return true;
      value = top.container;
      open_.pop_back();
    }
    root = value;
    return true;
  }

  std::span<const uint8_t> in_;
  size_t at_ = 0;
  std::vector<Open> open_;
  uint64_t owed_ = 0;  // the values the open containers still wait for
  std::string problem_;
};

}  // namespace

PyObject* read_plain(std::span<const uint8_t> stream, std::string& problem) {
  return Reader(stream).run(problem);
}

}  // namespace ranks::python
