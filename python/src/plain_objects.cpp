// An object's payload: the plain format (plain_format.hpp) for an object made only of Python's
// plain built-in values, pickle for the rest, as MMEngine and torch send every object. A
// payload's first byte tells the two apart.

#include <fmt/format.h>

#include <string>

#include "bindings.hpp"
#include "plain_format.hpp"
#include "ranks/errors.hpp"
#include "ranks/object/payload.hpp"

namespace ranks::python {

namespace {

// pickle's `name`, kept for the life of the process: the interpreter outlives every call.
py::handle pickle_function(const char* name) {
  return py::object(py::module_::import("pickle").attr(name)).release();
}

// value pickled (protocol pickle.DEFAULT_PROTOCOL), appended to out.
void append_pickle(py::handle value, std::string_view api, object::Bytes& out) {
  static const py::handle dumps = pickle_function("dumps");
  static const py::handle pickling_error = pickle_function("PicklingError");
  py::object pickled;
  try {
    pickled = dumps(value);
  } catch (py::error_already_set& error) {
    if (!error.matches(pickling_error) && !error.matches(PyExc_TypeError) &&
        !error.matches(PyExc_AttributeError)) {
      throw;
    }
    throw InvalidArgument(fmt::format("{}: the object cannot be pickled: {}", api,
                                      py::str(error.value()).cast<std::string>()));
  }
  char* data = nullptr;
  Py_ssize_t size = 0;
  PyBytes_AsStringAndSize(pickled.ptr(), &data, &size);
  out.insert(out.end(), data, data + size);
}

// Room for a payload about the size of this thread's last one, so that a program sending
// objects of a steady size writes each in one block, without growing it on the way (each step
// of growth is a copy into fresh pages, which costs more than writing the object).
thread_local size_t last_payload_bytes = 0;

// value's payload (the plain format, else pickle) appended to out.
void append_payload(py::handle value, std::string_view api, object::Bytes& out) {
  const size_t start = out.size();
  out.reserve(start + last_payload_bytes + last_payload_bytes / 8);
  if (!write_plain(value.ptr(), out)) append_pickle(value, api, out);
  last_payload_bytes = out.size() - start;
}

}  // namespace

object::Bytes payload_of(py::handle value, std::string_view api, uint64_t type_tag) {
  object::Bytes out(object::header_bytes);
  append_payload(value, api, out);
  object::write_header(out, out.size() - object::header_bytes, type_tag);
  return out;
}

py::object load_payload(std::span<const uint8_t> payload, std::string_view from) {
  if (!payload.empty() && payload[0] == kPickleProto) {
    static const py::handle loads = pickle_function("loads");
    py::memoryview view = py::memoryview::from_memory(payload.data(),
                                                      static_cast<ssize_t>(payload.size()));
    py::object value = loads(view);
    view.attr("release")();
    return value;
  }
  std::string problem;
  PyObject* value = read_plain(payload, problem);
  if (value == nullptr) object::throw_corrupt(from, "the plain value " + problem);
  return py::reinterpret_steal<py::object>(value);
}

void register_plain_objects(py::module_& m) {
  // The bytes an object collective carries for value (dist.py sends lists of them).
  m.def("dumps", [](py::handle value, std::string_view api) {
    object::Bytes out;
    append_payload(value, api, out);
    return py::bytes(reinterpret_cast<const char*>(out.data()), out.size());
  });
  // value in the plain format when it is plain, else None (for tests).
  m.def("plain_payload", [](py::handle value) -> py::object {
    object::Bytes out;
    if (!write_plain(value.ptr(), out)) return py::none();
    return py::bytes(reinterpret_cast<const char*>(out.data()), out.size());
  });
  // The object of one payload, as a peer's is read (for tests: the collectives read in place).
  m.def("load_payload", [](py::bytes payload) {
    const std::string_view bytes = payload;
    return load_payload({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                        "this payload");
  });
}

}  // namespace ranks::python
