// libFuzzer target: a peer's marshal payload as the Python package reads it (python/src/
// marshal_bounds.hpp, then CPython's own reader). The check must never crash or read past the
// input; a stream it accepts must never make CPython allocate far past the input's size (run
// with -malloc_limit_mb: that is what the check exists for), and CPython either reads it or
// raises. CPython is embedded, uninstrumented; the check is what the fuzzer steers by.
//
// RANKS_FUZZ_WRITE_SEEDS=DIR writes the seed corpus (marshal streams of plain values) to DIR.

#include <Python.h>
#include <marshal.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>

#include "marshal_bounds.hpp"

namespace {

// Seeds: what the package marshals for values programs gather.
const char* const kSeedExpressions[] = {
    "{'k%d' % i: i for i in range(20)}",
    "{'loss': [0.5, 0.25, float('nan')], 'ok': True, 'n': None, 'big': 2**90}",
    "[(i, 'a' * i, b'x' * i, {i, -i}, frozenset({i}), complex(i, 1)) for i in range(5)]",
    "(lambda s: [s, s, {'u': 'é\\u20ac'}])([1, 2])",
};

void write_seeds(const char* dir) {
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  int n = 0;
  for (const char* expression : kSeedExpressions) {
    PyObject* value = PyRun_String(expression, Py_eval_input, globals, globals);
    PyObject* bytes = value ? PyMarshal_WriteObjectToString(value, 4) : nullptr;
    if (bytes == nullptr) {
      PyErr_Print();
      std::abort();
    }
    std::ofstream(std::string(dir) + "/seed" + std::to_string(n++), std::ios::binary)
        .write(PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
    Py_DECREF(bytes);
    Py_DECREF(value);
  }
  Py_DECREF(globals);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Py_InitializeEx(0);
  if (const char* dir = std::getenv("RANKS_FUZZ_WRITE_SEEDS")) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string problem = ranks::python::marshal_stream_problem(std::span(data, size));
  if (!problem.empty()) return 0;
  PyObject* value =
      PyMarshal_ReadObjectFromString(reinterpret_cast<const char*>(data), static_cast<Py_ssize_t>(size));
  if (value == nullptr) {
    PyErr_Clear();  // bad UTF-8, a reference to nothing, an unhashable key: an error, not a crash
  } else {
    Py_DECREF(value);
  }
  return 0;
}
