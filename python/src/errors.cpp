// C++ errors as Python exceptions: ranks::Error's kinds become the classes of ranks.errors (which
// also derive from the matching builtin: InvalidArgument is a ValueError), with the C++ message.
// Each raised exception keeps the C++ exception it came from, so that when it leaves a simulated
// rank's body the simulator sees the very error the op failed with, as it does for C++ bodies.
// A C++ exception that is not a std::exception (the simulator unwinding a crashed rank) becomes a
// BaseException, which `except Exception:` in the program does not swallow.

#include <exception>

#include "bindings.hpp"
#include "ranks/errors.hpp"

namespace ranks::python {

namespace {

constexpr const char* origin_attribute = "_ranks_origin";

void raise_with_origin(const char* class_name, const std::string& message,
                       const std::exception_ptr& origin) {
  py::object type = py::module_::import("ranks.errors").attr(class_name);
  py::object error = type(message);
  auto* kept = new std::exception_ptr(origin);
  error.attr(origin_attribute) = py::capsule(kept, [](void* pointer) {
    delete static_cast<std::exception_ptr*>(pointer);
  });
  PyErr_SetObject(type.ptr(), error.ptr());
}

const char* class_for(std::string_view kind) {
  if (kind == "invalid_argument") return "InvalidArgument";
  if (kind == "unsupported") return "Unsupported";
  if (kind == "mismatch") return "Mismatch";
  if (kind == "timeout") return "Timeout";
  if (kind == "deadlock") return "Deadlock";
  if (kind == "rank_failure") return "RankFailure";
  if (kind == "rendezvous") return "RendezvousError";
  if (kind == "backend") return "BackendError";
  return "Error";
}

}  // namespace

void register_errors(py::module_&) {
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      std::rethrow_exception(thrown);
    } catch (const Error& error) {
      raise_with_origin(class_for(error.kind()), error.what(), thrown);
    } catch (const std::exception&) {
      throw;  // pybind11's own translation (error_already_set, MemoryError, RuntimeError, ...)
    } catch (...) {
      raise_with_origin("Unwinding", "a simulated rank is being unwound", thrown);
    }
  });
}

std::exception_ptr origin_of(py::handle error) {
  if (!py::hasattr(error, origin_attribute)) return nullptr;
  auto capsule = py::reinterpret_borrow<py::capsule>(error.attr(origin_attribute));
  return *static_cast<std::exception_ptr*>(capsule.get_pointer());
}

}  // namespace ranks::python
