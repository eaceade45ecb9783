// Tensors cross from Python by DLPack: torch tensors (CPU and CUDA) and numpy arrays hand over
// their memory without a copy, and the ranks::Tensor keeps the producer's object alive through
// the DLPack deleter until the last copy (a pending op's included) is gone.

#include <fmt/format.h>

#include "bindings.hpp"
#include "dlpack/dlpack.h"
#include "ranks/errors.hpp"

namespace ranks::python {

namespace {

std::string type_name(py::handle object) {
  return py::str(py::type::handle_of(object).attr("__qualname__")).cast<std::string>();
}

}  // namespace

Tensor tensor_of(py::handle object, std::string_view what) {
  static PyObject* const dlpack_name = PyUnicode_InternFromString("__dlpack__");
  static PyObject* const requires_grad_name = PyUnicode_InternFromString("requires_grad");
  PyObject* exported = PyObject_CallMethodNoArgs(object.ptr(), dlpack_name);
  if (exported == nullptr && PyErr_ExceptionMatches(PyExc_RuntimeError) &&
      PyObject_HasAttr(object.ptr(), requires_grad_name)) {
    // torch exports no tensor that requires grad; collectives work on its data, as
    // torch.distributed's do, so share the detached view (the same memory).
    PyErr_Clear();
    py::object detached = py::reinterpret_borrow<py::object>(object).attr("detach")();
    exported = PyObject_CallMethodNoArgs(detached.ptr(), dlpack_name);
  }
  if (exported == nullptr) {
    const bool not_a_tensor = PyErr_ExceptionMatches(PyExc_AttributeError) != 0;
    py::error_already_set error;
    if (not_a_tensor) {
      throw InvalidArgument(fmt::format(
          "{} must be a tensor (a torch.Tensor or numpy.ndarray), got {}", what,
          object.is_none() ? std::string("None") : type_name(object)));
    }
    // numpy refuses read-only arrays and some dtypes; torch refuses tensors that need grad.
    throw InvalidArgument(fmt::format("{} cannot be shared with ranks through DLPack: {}", what,
                                      error.what()));
  }
  py::object capsule = py::reinterpret_steal<py::object>(exported);
  auto* managed =
      static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) {
    PyErr_Clear();
    throw InvalidArgument(fmt::format("{}: __dlpack__() did not return a DLPack capsule", what));
  }
  Tensor tensor;
  try {
    tensor = Tensor::from_dlpack(managed);  // on a throw, the capsule still owns the tensor
  } catch (const InvalidArgument& error) {
    throw InvalidArgument(fmt::format("{}: {}", what, error.what()));
  }
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");  // the tensor owns it now
  return tensor;
}

}  // namespace ranks::python
