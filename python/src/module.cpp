// ranks._core: the C++ runtime and simulator for Python. The public face is the ranks package
// (ranks.dist, ranks.sim), written in Python over these functions.

#include "bindings.hpp"

PYBIND11_MODULE(_core, m) {
  using namespace ranks::python;
  m.doc() = "ranks' C++ runtime and simulator (use ranks.dist and ranks.sim)";
  register_errors(m);
  register_process_group(m);
  register_ops(m);
  register_objects(m);
  register_plain_objects(m);
  register_simulator(m);
  register_baton(m);
  m.def("set_package_directory", &set_package_directory);
  m.def("skip_frames_of", &skip_frames_of);
}
