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
  if (object.is_none() || !py::hasattr(object, "__dlpack__")) {
    throw InvalidArgument(fmt::format(
        "{} must be a tensor (a torch.Tensor or numpy.ndarray), got {}", what,
        object.is_none() ? std::string("None") : type_name(object)));
  }
  py::object capsule;
  try {
    capsule = object.attr("__dlpack__")();
  } catch (py::error_already_set& error) {
    // numpy refuses read-only arrays and some dtypes; torch refuses tensors that need grad.
    throw InvalidArgument(fmt::format("{} cannot be shared with ranks through DLPack: {}", what,
                                      error.what()));
  }
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
