#include "rank_threads.hpp"

#include <pybind11/pybind11.h>

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <utility>

extern "C" void ranks_python_point_gilstate_at(PyThreadState* state);

namespace ranks::python {

namespace {

namespace pyd = pybind11::detail;

// pybind11's thread-specific slots, read and written the way pybind11 itself does.
auto& keep_alive_key() {
#if PYBIND11_INTERNALS_VERSION == 4
  return pyd::get_local_internals().loader_life_support_tls_key;
#else
  return pyd::get_internals().loader_life_support_tls_key;
#endif
}
auto& thread_state_key() { return pyd::get_internals().tstate; }

thread_local RankThreads* active_threads = nullptr;

// torch's grad mode, through libc10's own functions, found once torch has loaded libc10 (torch
// loads it privately, so it is looked up by path among the loaded objects, not by dlsym alone).
struct TorchGradMode {
  bool (*is_enabled)() = nullptr;
  void (*set_enabled)(bool) = nullptr;
  bool found() const { return set_enabled != nullptr; }
};

TorchGradMode& torch_grad_mode() {
  static TorchGradMode functions;
  return functions;
}

int find_libc10(dl_phdr_info* info, size_t, void* path) {
  if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "/libc10.so") != nullptr) {
    *static_cast<const char**>(path) = info->dlpi_name;
    return 1;
  }
  return 0;
}

// Called on switches until found: cheap while torch is not imported (one dict lookup).
void look_for_torch() {
  static PyObject* const torch_name = PyUnicode_InternFromString("torch");
  if (PyDict_GetItemWithError(PyImport_GetModuleDict(), torch_name) == nullptr) {
    PyErr_Clear();
    return;
  }
  const char* path = nullptr;
  dl_iterate_phdr(find_libc10, &path);
  if (path == nullptr) return;  // torch is still being imported
  void* library = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  if (library == nullptr) return;
  TorchGradMode& functions = torch_grad_mode();
  functions.is_enabled =
      reinterpret_cast<bool (*)()>(dlsym(library, "_ZN3c108GradMode10is_enabledEv"));
  auto* set_enabled =
      reinterpret_cast<void (*)(bool)>(dlsym(library, "_ZN3c108GradMode11set_enabledEb"));
  if (functions.is_enabled != nullptr) functions.set_enabled = set_enabled;
  dlclose(library);  // torch keeps it loaded
}

}  // namespace

RankThreads* RankThreads::active() noexcept { return active_threads; }

void RankThreads::set_main_module(PyObject* module) {
  PyObject* modules = PyImport_GetModuleDict();
  if (caller_main_ == nullptr) {
    caller_main_ = PyDict_GetItemString(modules, "__main__");
    Py_XINCREF(caller_main_);
  }
  Slots& slots = slots_of(running_);
  Py_INCREF(module);
  Py_XSETREF(slots.main_module, module);
  install_main_module(slots);
}

void RankThreads::swap_torch_state(Slots& from, const Slots& to) noexcept {
  TorchGradMode& functions = torch_grad_mode();
  if (!functions.found()) {
    look_for_torch();
    if (!functions.found()) return;
  }
  from.grad_enabled = functions.is_enabled();
  if (to.grad_enabled != from.grad_enabled) functions.set_enabled(to.grad_enabled);
}

void RankThreads::install_main_module(const Slots& slots) noexcept {
  PyObject* module = slots.main_module != nullptr ? slots.main_module : caller_main_;
  if (module == nullptr) return;
  if (PyDict_SetItemString(PyImport_GetModuleDict(), "__main__", module) != 0) PyErr_Clear();
}

RankThreads::RankThreads(int world_size)
    : interpreter_(PyThreadState_Get()->interp), ranks_(static_cast<size_t>(world_size)) {
  caller_.state = PyThreadState_Get();
  outer_ = std::exchange(active_threads, this);
}

void RankThreads::switch_to(int rank) noexcept {
  if (rank == running_) return;
  if (rank >= static_cast<int>(ranks_.size())) ranks_.resize(static_cast<size_t>(rank) + 1);
  Slots& from = slots_of(running_);
  from.pybind_keep_alive_stack = PYBIND11_TLS_GET_VALUE(keep_alive_key());
  from.pybind_thread_state = PYBIND11_TLS_GET_VALUE(thread_state_key());
  Slots& to = slots_of(rank);
  if (to.state == nullptr) {
    // Made on first use: a rank that never runs costs nothing. PyThreadState_New only records
    // the state; it does not make it current or touch the GIL.
    to.state = PyThreadState_New(interpreter_);
  }
  PyThreadState_Swap(to.state);
  ranks_python_point_gilstate_at(to.state);
  PYBIND11_TLS_REPLACE_VALUE(keep_alive_key(), to.pybind_keep_alive_stack);
  PYBIND11_TLS_REPLACE_VALUE(thread_state_key(), to.pybind_thread_state);
  if (caller_main_ != nullptr) install_main_module(to);
  swap_torch_state(from, to);
  running_ = rank;
}

RankThreads::~RankThreads() {
  switch_to(-1);
  active_threads = outer_;
  if (caller_main_ != nullptr) install_main_module(caller_);
  Py_CLEAR(caller_main_);
  // Deleting a state clears the GILState slot if it points at that state: the caller's is back.
  for (Slots& slots : ranks_) {
    Py_CLEAR(slots.main_module);
    if (slots.state == nullptr) continue;
    PyThreadState_Clear(slots.state);
    PyThreadState_Delete(slots.state);
  }
}

}  // namespace ranks::python
