// The program's Python line for each op. CPython's frames give file, function and line; frames
// of the ranks package itself are skipped, so a report names `train.py:42`, not dist.py.

#include <Python.h>
#include <frameobject.h>

#include <string>

#include "bindings.hpp"
#include "ranks/detail/foreign_location.hpp"

namespace ranks::python {

namespace {

std::string& package_directory() {
  static std::string directory;
  return directory;
}

std::string_view text_of(PyObject* unicode) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(unicode, &size);
  if (data == nullptr) {
    PyErr_Clear();
    return {};
  }
  return {data, static_cast<size_t>(size)};
}

}  // namespace

bool in_package_file(std::string_view file) {
  const std::string& directory = package_directory();
  return !directory.empty() && file.starts_with(directory);
}

void set_package_directory(std::string_view directory) {
  package_directory() = std::string(directory) + "/";
}

std::source_location python_call_site() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    const std::string_view file = text_of(code->co_filename);
    if (!in_package_file(file)) {
      const std::source_location where = detail::foreign_location(
          file, text_of(code->co_name), static_cast<unsigned>(PyFrame_GetLineNumber(frame)));
      Py_DECREF(code);
      Py_DECREF(frame);
      return where;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  return std::source_location{};
}

}  // namespace ranks::python
