// Initialisation, the query functions, groups and barrier: thin bindings of ranks' own, which
// already have MMEngine's names and non-distributed fallbacks.

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "ranks/context.hpp"
#include "ranks/errors.hpp"
#include "ranks/init.hpp"
#include "ranks/real/fatal.hpp"
#include "ranks/sim.hpp"

namespace ranks::python {

namespace {

std::chrono::milliseconds milliseconds_of(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

InitOptions init_options(std::string backend, std::optional<std::string> init_method,
                         int world_size, int rank, std::optional<double> timeout_seconds) {
  InitOptions options;
  options.backend = std::move(backend);
  if (init_method) options.init_method = *init_method;
  options.world_size = world_size;
  options.rank = rank;
  if (timeout_seconds) options.timeout = milliseconds_of(*timeout_seconds);
  return options;
}

}  // namespace

bool simulating() { return detail::simulating_on_this_thread(); }

Group group_of(py::handle group) {
  if (group.is_none()) return Group{};
  if (!py::isinstance<Group>(group)) {
    throw InvalidArgument("group must be None (the default group) or a group from new_group(), got " +
                          py::str(py::type::handle_of(group).attr("__qualname__")).cast<std::string>());
  }
  return group.cast<Group>();
}

void register_process_group(py::module_& m) {
  m.def("init_process_group",
        [](std::string backend, std::optional<std::string> init_method, int world_size, int rank,
           std::optional<double> timeout, py::handle store) {
          if (simulating() && !backend.empty()) {
            sim::program_asks_for_backend(backend, python_call_site());
          }
          InitOptions options = init_options(std::move(backend), std::move(init_method),
                                             world_size, rank, timeout);
          options.store = store_of(store);
          // Without the GIL: the backends rendezvous through the store from threads of their own
          // too, and a Python store takes the GIL for each call.
          blocking([&] { init_process_group(options); });
        },
        py::arg("backend"), py::arg("init_method"), py::arg("world_size"), py::arg("rank"),
        py::arg("timeout"), py::arg("store") = py::none());
  m.def("init_dist",
        [](std::string launcher, std::string backend, std::optional<std::string> init_method,
           std::optional<double> timeout) {
          if (simulating() && !backend.empty()) {
            sim::program_asks_for_backend(backend, python_call_site());
          }
          init_dist(launcher, backend,
                    init_options(backend, std::move(init_method), -1, -1, timeout));
        },
        py::arg("launcher"), py::arg("backend"), py::arg("init_method"), py::arg("timeout"));
  // A Python rank's uncaught error, its traceback printed: leave as ranks::main does (the job's
  // first failure published or named, exit 75 when it is what the rank saw of another's).
  m.def("leave_after_error", [](const std::string& what, bool symptom) {
    detail::leave_after(what, symptom);
  });
  m.def("infer_launcher", &infer_launcher);
  m.def("destroy_process_group", &destroy_process_group);
  m.def("is_initialized", &is_initialized);
  m.def("is_distributed", &is_distributed);
  m.def("get_world_size", [](py::handle group) { return get_world_size(group_of(group)); });
  m.def("get_rank", [](py::handle group) { return get_rank(group_of(group)); });
  m.def("get_backend", [](py::handle group) { return get_backend(group_of(group)); });
  m.def("get_local_rank", &get_local_rank);
  m.def("get_local_size", &get_local_size);
  m.def("simulating", &simulating);
  // torch's init under the simulator (ranks._torch_sim): the backend the script asked for.
  m.def("program_asks_for_backend", [](const std::string& backend) {
    return sim::program_asks_for_backend(backend, python_call_site());
  });

  py::class_<Group>(m, "Group")
      .def_property_readonly("rank", &Group::rank)
      .def_property_readonly("size", &Group::size)
      .def_property_readonly("backend", &Group::backend)
      .def_property_readonly("ranks", &Group::global_ranks)
      .def_property_readonly("name", &Group::name)
      .def_property_readonly("is_member", &Group::is_member)
      .def_property(
          "timeout", [](const Group& group) { return group.timeout().count() / 1000.0; },
          [](Group& group, double seconds) { group.set_timeout(milliseconds_of(seconds)); })
      .def("__repr__", [](const Group& group) {
        return "<ranks group " + group.name() + ", rank " + std::to_string(group.rank()) + " of " +
               std::to_string(group.size()) + ">";
      });
  m.def(
      "new_group",
      [](std::vector<int> global_ranks, std::optional<std::string> backend) {
        const std::source_location where = python_call_site();
        return blocking([&] {
          return backend ? new_group(std::move(global_ranks), *backend, where)
                         : new_group(std::move(global_ranks), where);
        });
      },
      py::arg("ranks"), py::arg("backend") = py::none());
  m.def(
      "new_group_of_members",
      [](std::vector<int> global_ranks, std::string name, py::handle store) {
        const std::source_location where = python_call_site();
        std::shared_ptr<Store> members_store = store_of(store);
        return blocking([&] {
          return new_group_of_members(std::move(global_ranks), std::move(name),
                                      std::move(members_store), where);
        });
      },
      py::arg("ranks"), py::arg("name"), py::arg("store"));
  m.def("barrier", [](py::handle group) {
    const Group resolved = group_of(group);
    const std::source_location where = python_call_site();
    blocking([&] { barrier(resolved, where); });
  });
  m.def("sleep", [](double seconds) {
    const auto duration = std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9));
    blocking([&] { sleep_for(duration); });
  });
  m.def("now", [] { return static_cast<double>(now().count()) * 1e-9; });
}

}  // namespace ranks::python
