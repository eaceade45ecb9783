// The program's Python line for each op. CPython's frames give file, function and line; frames
// of the ranks package itself are skipped, and those of the libraries a program calls ranks
// through (torch, once ranks.torch is imported), so a report names `train.py:42`, not dist.py
// or torch's distributed_c10d.py; for DDP's gradient buckets, the line of `loss.backward()`.

#include <Python.h>
#include <frameobject.h>

#include <string>
#include <unordered_map>
#include <vector>
#include <utility>

#include "bindings.hpp"
#include "ranks/detail/foreign_location.hpp"

namespace ranks::python {

namespace {

// The package's directory, then the libraries', each ending in "/".
std::vector<std::string>& skipped_directories() {
  static std::vector<std::string> directories;
  return directories;
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

// What a code object says about its frames: whether they are the package's own, and each
// instruction offset's location. Keyed by the code object, which the cache keeps alive (so its
// address is never reused by another); bounded by the program's distinct call sites.
struct CodeSites {
  bool in_package = false;
  std::unordered_map<int, std::source_location> by_offset;
};

struct PairHash {
  size_t operator()(const std::pair<PyCodeObject*, int>& key) const {
    return std::hash<const void*>{}(key.first) * 31 + static_cast<size_t>(key.second);
  }
};

std::unordered_map<PyCodeObject*, CodeSites>& code_sites() {
  static auto* sites = new std::unordered_map<PyCodeObject*, CodeSites>;
  return *sites;
}

bool in_package_file_of(PyCodeObject* code);

CodeSites& sites_of(PyCodeObject* code) {
  auto [entry, added] = code_sites().try_emplace(code);
  if (added) {
    Py_INCREF(code);
    entry->second.in_package = in_package_file_of(code);
  }
  return entry->second;
}

}  // namespace

bool in_package_file(std::string_view file) {
  for (const std::string& directory : skipped_directories()) {
    if (!directory.empty() && file.starts_with(directory)) return true;
  }
  return false;
}

void set_package_directory(std::string_view directory) {
  auto& directories = skipped_directories();
  const std::string own = std::string(directory) + "/";
  if (directories.empty()) {
    directories.push_back(own);
  } else {
    directories.front() = own;
  }
}

void skip_frames_of(std::string_view directory) {
  auto& directories = skipped_directories();
  if (directories.empty()) directories.emplace_back();  // the package's, set later
  directories.push_back(std::string(directory) + "/");
  // Code objects seen before were judged without this directory.
  for (auto& [code, sites] : code_sites()) Py_DECREF(code);
  code_sites().clear();
}

namespace {
bool in_package_file_of(PyCodeObject* code) { return in_package_file(text_of(code->co_filename)); }
}  // namespace

std::source_location python_call_site() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    CodeSites& sites = sites_of(code);
    if (!sites.in_package) {
      auto [entry, added] = sites.by_offset.try_emplace(PyFrame_GetLasti(frame));
      if (added) {
        entry->second = detail::foreign_location(
            text_of(code->co_filename), text_of(code->co_name),
            static_cast<unsigned>(PyFrame_GetLineNumber(frame)));
      }
      Py_DECREF(code);
      Py_DECREF(frame);
      return entry->second;
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  return std::source_location{};
}

}  // namespace ranks::python
