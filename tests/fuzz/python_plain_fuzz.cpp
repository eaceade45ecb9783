// libFuzzer target: a peer's plain-format payload as the Python package reads it (python/src/
// plain_reader.cpp, with CPython embedded, uninstrumented). The reader must never crash, read
// past the input or leave a Python error set, and must not allocate far past the input's size
// (run with -malloc_limit_mb: every CPython object goes through malloc under PYTHONMALLOC=malloc).
// What it accepts must be plain and survive being sent on: write(read(x)) is read, and written
// again it takes the same bytes (in another order where a set iterates differently once rebuilt,
// as pickle's sets do too).
//
// RANKS_FUZZ_WRITE_SEEDS=DIR writes the seed corpus (payloads of plain values) to DIR.

#include <Python.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "plain_format.hpp"

namespace {

// Seeds: what the package writes for values programs gather.
const char* const kSeedExpressions[] = {
    "{'k%d' % i: i for i in range(20)}",
    "{'loss': [0.5, 0.25, float('nan')], 'ok': True, 'n': None, 'big': 2**90, 'neg': -2**40}",
    "[(i, 'a' * i, b'x' * i, {i, -i}, frozenset({i}), complex(i, 1)) for i in range(5)]",
    "[{'u': 'é\\u20ac\\ud800', 'long': 'x' * 300, (1, 'k'): [[], {}, ()]}]",
};

[[noreturn]] void python_failed() {
  PyErr_Print();
  std::abort();
}

void write_seeds(const char* dir) {
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  int n = 0;
  for (const char* expression : kSeedExpressions) {
    PyObject* value = PyRun_String(expression, Py_eval_input, globals, globals);
    std::vector<uint8_t> bytes;
    if (value == nullptr || !ranks::python::write_plain(value, bytes)) python_failed();
    std::ofstream(std::string(dir) + "/seed" + std::to_string(n++), std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    Py_DECREF(value);
  }
  Py_DECREF(globals);
}

// value written, then read back: what a receiver of value gets.
PyObject* round_trip(PyObject* value, std::vector<uint8_t>& bytes) {
  bytes.clear();
  if (!ranks::python::write_plain(value, bytes)) std::abort();  // what was read is plain
  std::string problem;
  PyObject* back = ranks::python::read_plain(bytes, problem);
  if (back == nullptr) std::abort();  // what was written is read
  return back;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Py_InitializeEx(0);
  if (const char* dir = std::getenv("RANKS_FUZZ_WRITE_SEEDS")) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string problem;
  PyObject* value = ranks::python::read_plain(std::span(data, size), problem);
  if (PyErr_Occurred()) std::abort();
  if (value == nullptr) {
    if (problem.empty()) std::abort();  // a refusal says why
    return 0;
  }
  std::vector<uint8_t> once;
  std::vector<uint8_t> twice;
  PyObject* back = round_trip(value, once);
  PyObject* again = round_trip(back, twice);
  if (once.size() != twice.size()) std::abort();
  Py_DECREF(again);
  Py_DECREF(back);
  Py_DECREF(value);
  return 0;
}
