# Every dependency comes from Debian's archive (tools/setup.sh installs them).
find_package(Boost 1.74 REQUIRED COMPONENTS fiber context)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(Threads REQUIRED)
find_path(DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
endif()

# Real backends arrive with their issues; until then the generated config says they are absent.
foreach(backend GLOO MPI NCCL)
  set(RANKS_HAS_${backend} 0)
endforeach()
