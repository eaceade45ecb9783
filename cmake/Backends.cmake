# The real backends: RANKS_WITH_<NAME> = AUTO (build it when its library is found) | ON (must) |
# OFF. Each backend lives in runtime/ranks/backends/<name>/ with the same file names and is built
# as its own shared library, libranks_<name>.so, beside libranks.so, which loads it when a process
# first asks for that backend (ranks/backends/plugin.hpp). What was built ends up in the generated
# ranks/config.hpp as RANKS_HAS_<NAME>.

# The library of backend `name` from `sources`; the caller links it to the backend's own library.
function(ranks_backend_library name)
  add_library(ranks_${name} SHARED ${ARGN})
  target_link_libraries(ranks_${name} PRIVATE ranks fmt::fmt)
  target_compile_options(ranks_${name} PRIVATE ${RANKS_WARNINGS} -fno-semantic-interposition)
  target_link_options(ranks_${name} PRIVATE -Wl,-Bsymbolic-functions)
  # Beside libranks.so, in the build tree as once installed; it finds libranks.so there too.
  set_target_properties(ranks_${name} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/runtime
    INSTALL_RPATH "$ORIGIN")
  install(TARGETS ranks_${name} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

function(ranks_backend name found)
  string(TOUPPER ${name} upper)
  set(dir ${PROJECT_SOURCE_DIR}/runtime/ranks/backends/${name})
  set(RANKS_HAS_${upper} 0 PARENT_SCOPE)
  if(RANKS_WITH_${upper} STREQUAL "OFF")
    message(STATUS "ranks: ${name} backend off (RANKS_WITH_${upper}=OFF)")
    return()
  endif()
  if(NOT ${found} OR NOT EXISTS ${dir}/backend.cpp)
    if(RANKS_WITH_${upper} STREQUAL "ON")
      message(FATAL_ERROR "ranks: RANKS_WITH_${upper}=ON but the ${name} library or sources are missing")
    endif()
    message(STATUS "ranks: ${name} backend not built (library not found)")
    return()
  endif()
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cpp)
  ranks_backend_library(${name} ${sources})
  set(RANKS_HAS_${upper} 1 PARENT_SCOPE)
  message(STATUS "ranks: ${name} backend built")
endfunction()

enable_language(C)  # FindMPI looks for the C bindings with the C compiler
find_package(MPI COMPONENTS C QUIET)
ranks_backend(mpi MPI_C_FOUND)
if(RANKS_HAS_MPI)
  target_link_libraries(ranks_mpi PRIVATE MPI::MPI_C)
endif()

# Debian's libgloo-dev ships headers and /usr/lib/libgloo.so, no CMake package.
find_path(GLOO_INCLUDE_DIR gloo/allreduce.h)
find_library(GLOO_LIBRARY gloo PATHS /usr/lib /usr/lib/x86_64-linux-gnu)
if(GLOO_INCLUDE_DIR AND GLOO_LIBRARY)
  set(GLOO_FOUND TRUE)
endif()
ranks_backend(gloo GLOO_FOUND)
if(RANKS_HAS_GLOO)
  target_include_directories(ranks_gloo PRIVATE ${GLOO_INCLUDE_DIR})
  target_link_libraries(ranks_gloo PRIVATE ${GLOO_LIBRARY})
endif()

include(${CMAKE_CURRENT_LIST_DIR}/Cuda.cmake)
