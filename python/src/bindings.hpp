#pragma once
// The pieces of the ranks._core extension module and what they share. Each register_* adds one
// concept's functions to the module (module.cpp calls them all).

#include <pybind11/pybind11.h>

#include <chrono>
#include <source_location>
#include <string_view>

#include "ranks/group.hpp"
#include "ranks/object/archive.hpp"
#include "ranks/store.hpp"
#include "ranks/tensor.hpp"
#include "ranks/work.hpp"

namespace ranks::python {

namespace py = pybind11;

void register_errors(py::module_& m);
void register_process_group(py::module_& m);
void register_ops(py::module_& m);
void register_objects(py::module_& m);
void register_plain_objects(py::module_& m);

// The payload an object collective carries for value: the object format's header
// (object/payload.hpp) with type_tag, then value in the plain format or pickled
// (plain_objects.cpp). Unpicklable values: InvalidArgument naming `api`.
object::Bytes payload_of(py::handle value, std::string_view api, uint64_t type_tag);
// The object of a payload's body; `from` names its sender in errors. A plain stream is checked
// as it is read (plain_format.hpp); pickle is trusted, as pickle.loads trusts its input.
py::object load_payload(std::span<const uint8_t> payload, std::string_view from);
void register_simulator(py::module_& m);
// The bare thread hand-over benchmarks compare with (baton.cpp).
void register_baton(py::module_& m);

// The Python line that called into ranks: the innermost frame outside the ranks package
// (dist.py's wrappers are not the program's call site), as the location ops and reports carry.
std::source_location python_call_site();
// Where the package's own .py files are (frames there are skipped by python_call_site).
void set_package_directory(std::string_view directory);
// Frames in files under `directory` (a library the program calls ranks through: torch) are not
// call sites either.
void skip_frames_of(std::string_view directory);
bool in_package_file(std::string_view file);

// A tensor (torch.Tensor, numpy.ndarray: anything with __dlpack__) as a ranks::Tensor sharing its
// memory, so that in-place collectives write into the caller's tensor. `what` names the argument
// in the error a non-tensor or a strided tensor gets.
Tensor tensor_of(py::handle object, std::string_view what);

// None: the default (world) group; else a ranks._core.Group.
Group group_of(py::handle group);

// A Python object with torch.distributed.Store's methods as a ranks Store (python_store.cpp);
// None: null. InvalidArgument naming a missing method.
std::shared_ptr<Store> store_of(py::handle store);

// A reduce op's name as Python passes it (a str, any case; checked by the op that parses it);
// anything else: InvalidArgument listing the ops.
std::string op_name_of(py::handle op);

// Whether this thread runs simulated ranks (then it holds the GIL throughout: every rank is a
// fiber of this thread, and a wait switches fibers rather than blocking the thread).
bool simulating();

// Runs a call that may block (an op, a wait): in a real run without the GIL, so other Python
// threads run meanwhile; simulated, with it (the ranks take turns on this one thread).
template <class F>
auto blocking(F&& call) {
  if (simulating()) return call();
  py::gil_scoped_release unlocked;
  return call();
}

// Waits for work, as blocking() runs it, naming the Python line that waits.
inline void wait_for(Work& work) {
  const std::source_location where = python_call_site();
  blocking([&] { work.wait(where); });
}
inline void wait_for(Work& work, std::chrono::milliseconds timeout) {
  const std::source_location where = python_call_site();
  blocking([&] { work.wait(timeout, where); });
}

}  // namespace ranks::python

namespace ranks::python {
// The C++ exception a ranks.errors exception was raised for (null: none), see errors.cpp.
std::exception_ptr origin_of(py::handle error);
}  // namespace ranks::python
