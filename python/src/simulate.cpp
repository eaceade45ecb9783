// Python rank bodies in the simulator: ranks.sim.run(fn, ...) and the script run of
// `ranks sim -- python3 script.py`. Every rank calls the same Python function on its own fiber
// with its own thread state (rank_threads.hpp). The function is called through CPython's C API,
// not pybind11, so that nothing of pybind11 sits between the fiber's entry and the rank's Python
// frames; no exception leaves a fiber's entry: the rank body turns a Python exception into the
// C++ error it stands for (an op's, kept by errors.cpp) or into a message with its traceback.

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "bindings.hpp"
#include "rank_threads.hpp"
#include "rank_turns.hpp"
#include "ranks/context.hpp"
#include "ranks/detail/rejected_op.hpp"
#include "ranks/errors.hpp"
#include "ranks/real/run_simulated.hpp"
#include "ranks/sim.hpp"

namespace ranks::python {

namespace {

// Python rank bodies need deeper C stacks than C++ ones: each Python-to-C-to-Python level costs
// about 650 bytes of C stack that the recursion limit does not bound, and torch's calls add
// their own. Stacks are reserved, not touched: only the pages a rank uses cost memory.
constexpr size_t python_stack_bytes = size_t{1} << 20;

std::string traceback_text(py::handle type, py::handle value, py::object traceback) {
  try {
    // The program's frames only: the package's own (the script runner, dist.py) come first.
    while (traceback && !traceback.is_none() &&
           in_package_file(traceback.attr("tb_frame").attr("f_code").attr("co_filename")
                               .cast<std::string>())) {
      traceback = traceback.attr("tb_next");
    }
    py::object lines = py::module_::import("traceback")
                           .attr("format_exception")(type, value,
                                                     traceback ? traceback : py::none());
    std::string text = py::str("").attr("join")(lines).cast<std::string>();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  } catch (py::error_already_set&) {
    return "a Python exception whose traceback could not be formatted";
  }
}

// Ctrl-C in a run: the rank running Python at the time fails with the KeyboardInterrupt; the
// others go on until they finish or block on it (RankFailure, their finally blocks run), and the
// run ends as any run with a failed rank does. Then the caller gets the KeyboardInterrupt.
// Raises the KeyboardInterrupt of a run that had one, in the run's caller.
void raise_if_interrupted(bool interrupted) {
  if (!interrupted) return;
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw py::error_already_set();
}

// An InvalidArgument that no op raised (no op's rejection, detail/rejected_op.hpp): the binding
// refused an argument before any op began (a tensor it cannot share, a list, an unknown op name).
// That is the body failing at its own line, reported with its traceback as a real run prints it,
// not as the op it last entered.
bool refused_before_any_op(const std::exception_ptr& origin) {
  try {
    std::rethrow_exception(origin);
  } catch (const Error& error) {
    return std::string_view(error.kind()) == "invalid_argument" &&
           ranks::detail::rejected_op_of(error) == nullptr;
  } catch (...) {
    return false;
  }
}

// What one rank runs: fn(), with its exception (if any) as the simulator expects a body's.
std::function<void()> rank_body(PyObject* fn, bool& interrupted) {
  return [fn, &interrupted] {
    if (PyObject* result = PyObject_CallNoArgs(fn)) {
      Py_DECREF(result);
      return;
    }
    PyObject* type = nullptr;
    PyObject* value = nullptr;
    PyObject* traceback = nullptr;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    py::object kept_type = py::reinterpret_steal<py::object>(type);
    py::object kept_value = py::reinterpret_steal<py::object>(value);
    py::object kept_traceback = py::reinterpret_steal<py::object>(traceback);
    if (std::exception_ptr origin = origin_of(kept_value); origin && !refused_before_any_op(origin)) {
      std::rethrow_exception(origin);
    }
    std::string message = traceback_text(kept_type, kept_value, kept_traceback);
    if (PyErr_GivenExceptionMatches(kept_type.ptr(), PyExc_KeyboardInterrupt)) {
      interrupted = true;  // the caller of the run gets the KeyboardInterrupt once it has ended
    }
    throw std::runtime_error(message);
  };
}

void adjust_for_python(sim::Options& options, RankThreads& threads) {
  options.on_rank_switch = [&threads](int rank) { threads.switch_to(rank); };
  if (options.stack_bytes == 0) options.stack_bytes = python_stack_bytes;
}

// Runs a simulation of Python rank bodies, each rank calling fn(): start(adjust, body) runs it
// with adjust applied to its options. The ranks are fibers of this thread, which holds the
// interpreter lock throughout while each rank's thread state is swapped in (RankThreads), or
// (rank_threads) each on a thread of its own while this thread lets go of the lock (RankTurns).
// Returns what start returned; a KeyboardInterrupt of the run is raised here, once it is over.
template <class Start>
auto run_python_ranks(PyObject* fn, bool rank_threads, int world_size, Start&& start) {
  bool interrupted = false;
  std::function<void()> body = rank_body(fn, interrupted);
  decltype(start(std::function<void(sim::Options&)>{}, body)) result{};
  if (rank_threads) {
    RankTurns turns;
    std::function<void()> threaded = RankTurns::on_own_thread(body);
    py::gil_scoped_release unlocked;
    result = start(std::function<void(sim::Options&)>(RankTurns::adjust), threaded);
  } else {
    RankThreads threads(world_size);
    result = start(std::function<void(sim::Options&)>(
                       [&](sim::Options& options) { adjust_for_python(options, threads); }),
                   body);
  }
  raise_if_interrupted(interrupted);
  return result;
}

}  // namespace

void register_simulator(py::module_& m) {
  py::class_<sim::RankReport>(m, "RankReport")
      .def_readonly("rank", &sim::RankReport::rank)
      .def_readonly("state", &sim::RankReport::state)
      .def_readonly("op", &sim::RankReport::op)
      .def_readonly("group", &sim::RankReport::group)
      .def_readonly("seq", &sim::RankReport::seq)
      .def_readonly("where", &sim::RankReport::where)
      .def_readonly("error", &sim::RankReport::error)
      .def_readonly("peer", &sim::RankReport::peer)
      .def_readonly("dtype", &sim::RankReport::dtype)
      .def_readonly("count", &sim::RankReport::count);
  py::class_<sim::Hazard>(m, "Hazard")
      .def_readonly("kind", &sim::Hazard::kind)
      .def_readonly("message", &sim::Hazard::message)
      .def_readonly("ranks", &sim::Hazard::ranks)
      .def_readonly("ops", &sim::Hazard::ops)
      .def_readonly("where", &sim::Hazard::where)
      .def_readonly("occurrences", &sim::Hazard::occurrences)
      .def_readonly("accepted", &sim::Hazard::accepted);
  py::class_<sim::Report>(m, "Report")
      .def_property_readonly("outcome",
                             [](const sim::Report& r) { return std::string(sim::outcome_name(r.outcome)); })
      .def_property_readonly("virtual_time_ns",
                             [](const sim::Report& r) { return r.virtual_time.count(); })
      .def_readonly("world_size", &sim::Report::world_size)
      .def_readonly("seed", &sim::Report::seed)
      .def_readonly("message", &sim::Report::message)
      .def_readonly("ranks", &sim::Report::ranks)
      .def_readonly("cycle", &sim::Report::cycle)
      .def_readonly("hazards", &sim::Report::hazards)
      .def("to_text", &sim::Report::to_text)
      .def("to_json", &sim::Report::to_json);

  m.def("simulate",
        [](py::object fn, int world_size, int ranks_per_node, std::string backend, uint64_t seed,
           double timeout, std::vector<std::string> faults, bool move_data,
           std::optional<std::string> trace, std::string model, size_t stack_bytes,
           std::vector<std::string> accept, bool rank_threads) {
          if (simulating()) {
            throw InvalidArgument("ranks.sim.run() was called from a simulated rank: runs do not nest");
          }
          sim::Options options;
          options.world_size = world_size;
          options.ranks_per_node = ranks_per_node;
          options.backend = std::move(backend);
          options.seed = seed;
          options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
          options.faults = std::move(faults);
          options.move_data = move_data;
          if (trace) options.trace = *trace;
          options.model = std::move(model);
          options.stack_bytes = stack_bytes;
          options.accept = std::move(accept);
          return run_python_ranks(fn.ptr(), rank_threads, world_size,
                                  [&](const std::function<void(sim::Options&)>& adjust,
                                      const std::function<void()>& body) {
                                    adjust(options);
                                    return sim::run(options, body);
                                  });
        },
        py::arg("fn"), py::arg("world_size"), py::arg("ranks_per_node"), py::arg("backend"),
        py::arg("seed"), py::arg("timeout"), py::arg("faults"), py::arg("move_data"),
        py::arg("trace"), py::arg("model"), py::arg("stack_bytes"), py::arg("accept"),
        py::arg("rank_threads") = false);

  m.def("set_turn_callbacks", [](py::object given, py::object taken) {
    RankTurns::set_turn_callbacks(given.is_none() ? nullptr : given.ptr(),
                                  taken.is_none() ? nullptr : taken.ptr());
  });

  m.def("set_main_module", [](py::object module) {
    if (RankTurns::on_rank_thread()) {
      RankTurns::set_main_module(module.ptr());
      return;
    }
    RankThreads* threads = RankThreads::active();
    if (threads == nullptr || !simulating()) {
      throw InvalidArgument("set_main_module: only a simulated rank has a __main__ of its own");
    }
    threads->set_main_module(module.ptr());
  });

  // A script's simulated rank on fibers (a ranks.dist script) is not distributed until the
  // script's own init_process_group or init_dist, as a real process is not: code before it gives
  // the same numbers simulated and real. (torch's own state does the same for torch scripts.)
  m.def("await_own_init", [] {
    Context& context = ranks::current();
    if (!simulating() || !context.started_by_main) {
      throw InvalidArgument("await_own_init: only a simulated rank waits for its own init");
    }
    context.initialized = false;
    context.awaiting_init = true;
  });

  // `ranks sim -- python3 script.py`: fn runs the script as __main__ on every rank; options come
  // from the RANKS_SIM_* variables, and the reports go where ranks::main sends them.
  m.def(
      "run_script_simulated",
      [](py::object fn, bool rank_threads) {
        const char* world = std::getenv("RANKS_SIM_WORLD_SIZE");
        return run_python_ranks(fn.ptr(), rank_threads,
                                world != nullptr ? std::max(1, std::atoi(world)) : 8,
                                [](const std::function<void(sim::Options&)>& adjust,
                                   const std::function<void()>& body) {
                                  return detail::run_simulated(body, adjust);
                                });
      },
      py::arg("fn"), py::arg("rank_threads") = false);
}

}  // namespace ranks::python
