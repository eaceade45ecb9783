// Object collectives: Python objects travel as payloads (plain_objects.cpp: the plain format or
// pickle) through ranks' own object collectives, which check lengths before allocating and name
// the API, group and call site in every message and report.

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dlpack/dlpack.h"
#include "ranks/detail/dlpack_bool.hpp"
#include "ranks/objects.hpp"

namespace ranks::python {

namespace {

using Pickles = std::vector<std::string>;

// Decoding makes containers and no garbage: Python's cyclic collector, which would run every 700
// of them and walk the whole heap as they age (torch's objects included), waits until the
// decoded objects are complete.
class NoCollection {
 public:
  NoCollection() : enabled_(PyGC_Disable() == 1) {}
  ~NoCollection() {
    if (enabled_) PyGC_Enable();
  }
  NoCollection(const NoCollection&) = delete;
  NoCollection& operator=(const NoCollection&) = delete;

 private:
  bool enabled_;
};

// The object of each of count payloads (payload(i) its bytes, from(i) who sent it), read in
// place: no bytes object per payload, which would be a fresh allocation and a copy every call.
// Entry `own` (if >= 0) is own_value instead: a rank has its object.
template <class PayloadOf, class FromOf>
py::list decode_each(size_t count, PayloadOf payload, FromOf from, int own = -1,
                     py::handle own_value = {}) {
  NoCollection paused;
  py::list out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i] = static_cast<int>(i) == own ? py::reinterpret_borrow<py::object>(own_value)
                                        : load_payload(payload(i), from(i));
  }
  return out;
}

// Group rank i, for messages.
auto rank_in(const Group& group) {
  return [&group](size_t i) { return object::describe_rank(static_cast<int>(i), group); };
}

std::span<const uint8_t> span_of(const std::string& text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// Python payloads carry the object format's header (object/payload.hpp), so that the exchange
// checks sizes and a peer checks magic, version and type as for any object.
constexpr uint64_t kPythonObjectTag = object::type_tag_detail::fnv1a("python object");

// The body of group rank r's framed payload, its header checked.
std::span<const uint8_t> body_of(const object::Parts& parts, size_t r, const Group& group) {
  return object::checked_body(parts[r], object::describe_rank(static_cast<int>(r), group),
                              kPythonObjectTag, "python object");
}

// all_gather_object or gather_object (`api`) of own: exchange(payload, call site) moves the
// bytes, returning every member's where this rank receives them, read in place;
// entry `self` is `own` (this rank's object, or dst's on dst). Nullopt where nothing is received.
template <class Exchange>
std::optional<py::list> gathered(const char* api, py::handle own,
                                 const Group& group, int self, Exchange exchange) {
  const std::source_location where = python_call_site();
  if (object::alone_in(group, api, where)) {
    py::list out;
    out.append(own);
    return out;
  }
  object::Bytes payload = payload_of(own, api, kPythonObjectTag);
  object::KeepExchangeBlocks keep;  // outlives parts, whose blocks it keeps for the next call
  std::optional<object::Parts> parts;
  blocking([&] {
    ranks::detail::ObjectCallScope call(api, group, where);
    parts = exchange(std::move(payload), where);
    return 0;
  });
  if (!parts) return std::nullopt;
  return decode_each(
      parts->size(), [&](size_t i) { return body_of(*parts, i, group); }, rank_in(group), self,
      own);
}

}  // namespace

// all_gather_object and gather_object take the object and write its payload straight into the
// bytes they send; broadcast_object_list and collect_results take payloads (dist.py's _dumps).
// Payloads travel as they are, through the byte exchanges under ranks' object collectives
// (object/exchange.hpp): no second encoding around them.
void register_objects(py::module_& m) {
  m.def("broadcast_object_list", [](Pickles pickles, int src, py::handle group) {
    const Group resolved = group_of(group);
    const std::source_location where = python_call_site();
    blocking([&] {
      broadcast_object_list(pickles, src, resolved, where);
      return 0;
    });
    return decode_each(
        pickles.size(), [&](size_t i) { return span_of(pickles[i]); },
        [&](size_t) { return object::describe_rank(src, resolved); });
  });
  m.def("all_gather_object", [](py::handle own, py::handle group) {
    const Group resolved = group_of(group);
    return gathered("all_gather_object", own, resolved, resolved.rank(),
                    [&](object::Bytes mine, where_t where) {
                      return std::optional<object::Parts>(object::all_gather_bytes(
                          std::move(mine), resolved, "all_gather_object", where));
                    });
  });
  m.def("gather_object", [](py::handle own, int dst, py::handle group) {
    const Group resolved = group_of(group);
    return gathered("gather_object", own, resolved, dst,
                    [&](object::Bytes mine, where_t where) {
                      return object::gather_bytes(std::move(mine), dst, resolved, "gather_object",
                                                  where);
                    });
  });
  m.def("collect_results",
        [](Pickles part, size_t size, std::string device,
           std::optional<std::string> tmpdir) -> std::optional<py::list> {
          const std::source_location where = python_call_site();
          std::optional<std::filesystem::path> directory;
          if (tmpdir) directory = *tmpdir;
          auto collected =
              blocking([&] { return collect_results(part, size, device, directory, where); });
          if (!collected) return std::nullopt;
          return decode_each(
              collected->size(), [&](size_t i) { return span_of((*collected)[i]); },
              [](size_t i) { return fmt::format("collect_results item {}", i); });
        });
  m.def("sync_random_seed", [](py::handle group) {
    const Group resolved = group_of(group);
    const std::source_location where = python_call_site();
    return blocking([&] { return sync_random_seed(resolved, where); });
  });
  // Values come back as new tensors (promoted to one dtype, on their own device), as DLPack
  // capsules that dist.py turns into the program's tensor type.
  m.def("all_reduce_dict", [](py::dict data, std::string op, py::handle group) {
    std::map<std::string, Tensor> values;
    for (auto [key, value] : data) {
      const std::string name = py::str(key);
      values.emplace(name, tensor_of(value, "data['" + name + "']"));
    }
    const Group resolved = group_of(group);
    const std::source_location where = python_call_site();
    blocking([&] {
      all_reduce_dict(values, op, resolved, where);
      return 0;
    });
    py::dict out;
    for (auto& [name, value] : values) {
      DLManagedTensor* exported = value.to_dlpack();
      // torch 1.13 and numpy 1.24 import no bool through DLPack: bool results go as uint8 of
      // the same bytes, which dist.py views as bool again.
      if (exported->dl_tensor.dtype.code == ranks::detail::kDLBoolCode) {
        exported->dl_tensor.dtype.code = kDLUInt;
      }
      out[py::str(name)] = py::capsule(exported, "dltensor", [](PyObject* capsule) {
        if (PyCapsule_IsValid(capsule, "dltensor")) {  // never consumed: still ours to free
          auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
          managed->deleter(managed);
        }
      });
    }
    return out;
  });
}

}  // namespace ranks::python
