# The real backends: RANKS_WITH_<NAME> = AUTO (build it when its library is found) | ON (must) |
# OFF. Each backend lives in runtime/ranks/backends/<name>/ with the same file names; what was
# built ends up in the generated ranks/config.hpp as RANKS_HAS_<NAME>.

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
  target_sources(ranks PRIVATE ${sources})
  set(RANKS_HAS_${upper} 1 PARENT_SCOPE)
  message(STATUS "ranks: ${name} backend built")
endfunction()

enable_language(C)  # FindMPI looks for the C bindings with the C compiler
find_package(MPI COMPONENTS C QUIET)
ranks_backend(mpi MPI_C_FOUND)
if(RANKS_HAS_MPI)
  target_link_libraries(ranks PRIVATE MPI::MPI_C)
endif()

# Debian's libgloo-dev ships headers and /usr/lib/libgloo.so, no CMake package.
find_path(GLOO_INCLUDE_DIR gloo/allreduce.h)
find_library(GLOO_LIBRARY gloo PATHS /usr/lib /usr/lib/x86_64-linux-gnu)
if(GLOO_INCLUDE_DIR AND GLOO_LIBRARY)
  set(GLOO_FOUND TRUE)
endif()
ranks_backend(gloo GLOO_FOUND)
if(RANKS_HAS_GLOO)
  target_include_directories(ranks PRIVATE ${GLOO_INCLUDE_DIR})
  target_link_libraries(ranks PRIVATE ${GLOO_LIBRARY})
endif()

include(${CMAKE_CURRENT_LIST_DIR}/Cuda.cmake)
