# Every dependency comes from Debian's archive (tools/setup.sh installs them).
find_package(Boost 1.74 REQUIRED COMPONENTS fiber context)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(Threads REQUIRED)
find_package(cereal CONFIG REQUIRED)
find_path(DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)
# xxHash, header-only (XXH_INLINE_ALL): nothing to link, nothing for an installed ranks to need.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
# OpenSSL's libcrypto (libssl-dev): the launchers of a multi-node job prove the job's secret to
# each other with HMAC-SHA256 (tools/ranks/node_handshake.hpp). The `ranks` command alone links it.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
endif()

# The Python package: pybind11 and the interpreter given as Python3_EXECUTABLE (tools/test.sh
# gives the project's virtual environment's; `pip install` the one it runs in), by default
# Debian's python3 (python3-dev, pybind11-dev), not whichever python3 is first on PATH: the
# package is built for its ABI and `cmake --install` puts it where that one looks
# (lib/python3/dist-packages).
set(RANKS_HAS_PYTHON OFF)
if(NOT RANKS_WITH_PYTHON STREQUAL "OFF")
  if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module)
  set(PYBIND11_FINDPYTHON ON)
  # pybind11 from that interpreter's packages (pip's build environment, the project's virtual
  # environment) first, else the system's (pybind11-dev).
  if(Python3_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -m pybind11 --cmakedir
                    OUTPUT_VARIABLE RANKS_PYBIND11_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
                    ERROR_QUIET)
  endif()
  find_package(pybind11 CONFIG QUIET HINTS ${RANKS_PYBIND11_DIR})
  if(Python3_FOUND AND pybind11_FOUND)
    set(RANKS_HAS_PYTHON ON)
  elseif(RANKS_WITH_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "RANKS_WITH_PYTHON=ON needs python3-dev and pybind11-dev")
  endif()
endif()
message(STATUS "ranks: Python package ${RANKS_HAS_PYTHON}")
# torch's launcher, for the tests that run programs under it: the one beside the interpreter
# (the project's environment's), else the first on PATH.
if(Python3_EXECUTABLE)
  get_filename_component(RANKS_PYTHON_BIN_DIR "${Python3_EXECUTABLE}" DIRECTORY)
endif()
find_program(RANKS_TORCHRUN torchrun HINTS ${RANKS_PYTHON_BIN_DIR} NO_CACHE)
