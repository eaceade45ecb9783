#pragma once
// A real backend is its own shared library (libranks_gloo.so, libranks_mpi.so, libranks_nccl.so,
// next to libranks.so), loaded the first time a process asks for it. A simulated run, or a real
// one on gloo, then never maps NCCL (200+ MB) or Open MPI and its dependencies: each process
// starts ~3 ms sooner, and a program built with every backend runs where only some of their
// libraries are installed.
//
// Each library exports one C function, ranks_backend_plugin_<name>, returning its entry below;
// the registry checks the version it was built with before calling anything else.

#include <memory>

#include "ranks/backend.hpp"
#include "ranks/backends/registry.hpp"
#include "ranks/config.hpp"

namespace ranks::backends {

struct PluginEntry {
  const char* version;  // RANKS_VERSION of the build that made the library
  Backend* (*create_world)(const WorldSetup& setup);  // ownership passes to the caller
};

}  // namespace ranks::backends

// In the backend's backend.cpp, after create_world is defined: RANKS_BACKEND_PLUGIN(gloo).
#define RANKS_BACKEND_PLUGIN(name)                                                       \
  extern "C" __attribute__((visibility("default")))                                      \
  const ranks::backends::PluginEntry* ranks_backend_plugin_##name() {                    \
    static const ranks::backends::PluginEntry entry{                                     \
        RANKS_VERSION, [](const ranks::backends::WorldSetup& setup) -> ranks::Backend* { \
          return ranks::backends::name::create_world(setup).release();                   \
        }};                                                                              \
    return &entry;                                                                       \
  }
