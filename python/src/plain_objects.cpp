// The object collectives' fast path: an object made only of Python's plain built-in values
// travels as CPython's marshal format (version 4) instead of pickle. Marshal writes and reads
// these types in C without pickle's opcode machinery and memo (faster for an evaluation's
// metrics dicts: reports/python.md), and its format for them has not changed since Python 3.4.
//
// Marshal is faithful only for the exact types below: it refuses subclasses, but writes any
// object with the buffer protocol (a numpy array or scalar, bytearray, memoryview) as bytes, and
// it writes code objects, which pickle refuses. So an object goes this way only when every value
// reachable from it has one of these exact types and no container is reached twice (all_plain);
// anything else goes through pickle, as in
// MMEngine and torch. A payload's first byte tells the two apart: pickle's protocol 2 and up
// opens with PROTO (0x80), which no marshal stream begins with (type codes are ASCII letters and
// signs, with 0x80 only as a flag on them). A marshal payload from a peer is checked
// (marshal_bounds.hpp) before CPython reads it.

#include <Python.h>
#include <marshal.h>

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "marshal_bounds.hpp"
#include "ranks/object/payload.hpp"

namespace ranks::python {

namespace {

bool is_plain_leaf(PyObject* value) {
  return value == Py_None || PyBool_Check(value) || PyLong_CheckExact(value) ||
         PyFloat_CheckExact(value) || PyUnicode_CheckExact(value) || PyBytes_CheckExact(value) ||
         PyComplex_CheckExact(value);
}

bool is_plain_container(PyObject* value) {
  return PyDict_CheckExact(value) || PyList_CheckExact(value) || PyTuple_CheckExact(value) ||
         PySet_CheckExact(value) || PyFrozenSet_CheckExact(value);
}

// Whether every value reachable from root is of a plain type, and no container is reached twice
// (shared, or part of a cycle): marshal would write a reference to it, and a receiver accepts
// references only to objects complete when named (marshal_bounds.hpp), so those go by pickle,
// which keeps them as they were. A container referenced once cannot be reached twice.
bool all_plain(PyObject* root) {
  std::vector<std::pair<PyObject*, int>> pending{{root, 0}};
  std::unordered_set<PyObject*> seen;
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    if (is_plain_leaf(value)) continue;
    if (!is_plain_container(value) || depth >= kMaxPlainDepth) return false;
    if (Py_REFCNT(value) > 1 && !seen.insert(value).second) return false;
    if (PyDict_CheckExact(value)) {
      Py_ssize_t at = 0;
      PyObject* key = nullptr;
      PyObject* item = nullptr;
      while (PyDict_Next(value, &at, &key, &item)) {
        pending.emplace_back(key, depth + 1);
        pending.emplace_back(item, depth + 1);
      }
    } else if (PyList_CheckExact(value) || PyTuple_CheckExact(value)) {
      PyObject* const* items = PySequence_Fast_ITEMS(value);
      for (Py_ssize_t i = 0, n = PySequence_Fast_GET_SIZE(value); i < n; ++i) {
        pending.emplace_back(items[i], depth + 1);
      }
    } else {  // set, frozenset: iterating their own items runs no Python code
      py::iterator it = py::reinterpret_borrow<py::iterable>(value).begin();
      for (; it != py::iterator::sentinel(); ++it) pending.emplace_back(it->ptr(), depth + 1);
    }
  }
  return true;
}

constexpr uint8_t kPickleProto = 0x80;

}  // namespace

py::object load_payload(std::span<const uint8_t> payload, std::string_view from) {
  if (!payload.empty() && payload[0] == kPickleProto) {
    // Kept for the life of the process: the interpreter outlives every call.
    static const py::handle pickle_loads =
        py::object(py::module_::import("pickle").attr("loads")).release();
    py::memoryview view = py::memoryview::from_memory(payload.data(),
                                                      static_cast<ssize_t>(payload.size()));
    py::object value = pickle_loads(view);
    view.attr("release")();
    return value;
  }
  if (std::string problem = marshal_stream_problem(payload); !problem.empty()) {
    object::throw_corrupt(from, "the marshal stream " + problem);
  }
  PyObject* value = PyMarshal_ReadObjectFromString(reinterpret_cast<const char*>(payload.data()),
                                                   static_cast<Py_ssize_t>(payload.size()));
  if (value == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(value);
}

void register_plain_objects(py::module_& m) {
  // value as marshal bytes when it is plain (see above), else None (dist.py pickles it).
  m.def("marshal_plain", [](py::handle value) -> py::object {
    if (!all_plain(value.ptr())) return py::none();
    PyObject* bytes = PyMarshal_WriteObjectToString(value.ptr(), 4);
    if (bytes == nullptr) {
      PyErr_Clear();  // what marshal cannot write, pickle may
      return py::none();
    }
    return py::reinterpret_steal<py::object>(bytes);
  });
  // The object of one payload, as a peer's is read (for tests: the collectives read in place).
  m.def("load_payload", [](py::bytes payload) {
    const std::string_view bytes = payload;
    return load_payload({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                        "this payload");
  });
}

}  // namespace ranks::python
