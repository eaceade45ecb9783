// Tensors cross from Python by DLPack: torch tensors (CPU and CUDA) and numpy arrays hand over
// their memory without a copy, and the ranks::Tensor keeps the producer's object alive through
// the DLPack deleter until the last copy (a pending op's included) is gone.

#include <fmt/format.h>

#include <cstring>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "dlpack/dlpack.h"
#include "ranks/detail/dlpack_bool.hpp"
#include "ranks/errors.hpp"

namespace ranks::python {

namespace {

std::string type_name(py::handle object) {
  return py::str(py::type::handle_of(object).attr("__qualname__")).cast<std::string>();
}

// torch 1.13 and numpy 1.24 export no bool tensor through DLPack. Such a tensor is shared as a
// uint8 view of the same memory, relabelled bool once imported: the collectives write into the
// caller's memory as for any other dtype. Null (no Python error set) for any other object.
PyObject* export_bool_as_bytes(py::handle object) {
  static PyObject* const dtype_name = PyUnicode_InternFromString("dtype");
  PyObject* dtype = PyObject_GetAttr(object.ptr(), dtype_name);
  if (dtype == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  const std::string named = py::str(py::reinterpret_steal<py::object>(dtype));
  if (named != "torch.bool" && named != "bool") return nullptr;
  const char* library = named == "bool" ? "numpy" : "torch";
  try {
    py::object bytes = py::reinterpret_borrow<py::object>(object).attr("view")(
        py::module_::import(library).attr("uint8"));
    return bytes.attr("__dlpack__")().release().ptr();
  } catch (py::error_already_set&) {
    return nullptr;  // the caller reports the original refusal
  }
}

// A plain torch cpu tensor exported by torch.utils.dlpack.to_dlpack, torch's exporter without
// Tensor.__dlpack__'s Python method around it (a Python frame on every share of a tensor).
// What that frame checks does not apply here: only exactly torch.Tensor is taken (no subclass
// with __torch_function__), only on the cpu (on a GPU it orders the streams), a tensor that
// requires grad is shared as its detached view would be, and the conjugate and negative bits
// are set only on complex tensors (ranks supports no complex dtype) and by torch's private
// _neg_view. Null (no Python error set) otherwise, or where the exporter refuses (bool): the
// caller then asks __dlpack__, which says why.
PyObject* export_torch_cpu(py::handle object) {
  static PyTypeObject* tensor_type = nullptr;
  static PyObject* to_dlpack = nullptr;
  if (tensor_type == nullptr) {
    if (std::strcmp(Py_TYPE(object.ptr())->tp_name, "Tensor") != 0) return nullptr;
    py::object torch =
        py::reinterpret_steal<py::object>(PyImport_GetModule(py::str("torch").ptr()));
    if (!torch) {
      PyErr_Clear();  // torch not imported (then no error is set), or sys.modules unreadable
      return nullptr;
    }
    try {
      py::object exporter = py::module_::import("torch.utils.dlpack").attr("to_dlpack");
      to_dlpack = exporter.release().ptr();
      py::object type = torch.attr("Tensor");
      tensor_type = reinterpret_cast<PyTypeObject*>(type.release().ptr());
    } catch (py::error_already_set&) {
      return nullptr;
    }
  }
  if (Py_TYPE(object.ptr()) != tensor_type) return nullptr;
  PyObject* capsule = PyObject_CallOneArg(to_dlpack, object.ptr());
  if (capsule == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  const auto* managed =
      static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed == nullptr || managed->dl_tensor.device.device_type != kDLCPU) {
    PyErr_Clear();
    Py_DECREF(capsule);  // unused: torch's deleter frees the export
    return nullptr;
  }
  return capsule;
}

}  // namespace

Tensor tensor_of(py::handle object, std::string_view what) {
  static PyObject* const dlpack_name = PyUnicode_InternFromString("__dlpack__");
  static PyObject* const requires_grad_name = PyUnicode_InternFromString("requires_grad");
  PyObject* exported = export_torch_cpu(object);
  if (exported == nullptr) exported = PyObject_CallMethodNoArgs(object.ptr(), dlpack_name);
  bool relabel_bool = false;
  if (exported == nullptr) {
    // The refusal is fetched at once: nothing may look an attribute up while an error is
    // pending (a lookup that misses the type's cache then fails and clears the error).
    std::optional<py::error_already_set> refusal{std::in_place};
    if (refusal->matches(PyExc_AttributeError)) {
      throw InvalidArgument(fmt::format(
          "{} must be a tensor (a torch.Tensor or numpy.ndarray), got {}", what,
          object.is_none() ? std::string("None") : type_name(object)));
    }
    if (refusal->matches(PyExc_RuntimeError) &&
        PyObject_HasAttr(object.ptr(), requires_grad_name)) {
      // torch exports no tensor that requires grad; collectives work on its data, as
      // torch.distributed's do, so share the detached view (the same memory).
      py::object detached = py::reinterpret_borrow<py::object>(object).attr("detach")();
      exported = PyObject_CallMethodNoArgs(detached.ptr(), dlpack_name);
      if (exported == nullptr) refusal.emplace();
    }
    if (exported == nullptr) {
      exported = export_bool_as_bytes(object);
      relabel_bool = exported != nullptr;
    }
    if (exported == nullptr) {
      // numpy refuses read-only arrays and some dtypes; torch refuses some dtypes.
      throw InvalidArgument(fmt::format("{} cannot be shared with ranks through DLPack: {}",
                                        what, refusal->what()));
    }
  }
  py::object capsule = py::reinterpret_steal<py::object>(exported);
  auto* managed =
      static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) {
    PyErr_Clear();
    throw InvalidArgument(fmt::format("{}: __dlpack__() did not return a DLPack capsule", what));
  }
  if (relabel_bool) managed->dl_tensor.dtype.code = ranks::detail::kDLBoolCode;  // bits: 8
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
