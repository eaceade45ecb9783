# CUDA tensors and the NCCL backend, both behind RANKS_WITH_NCCL (AUTO|ON|OFF):
#   RANKS_HAS_CUDA  built against the CUDA runtime: Tensor memory on Device::cuda(k) is device memory
#   RANKS_HAS_NCCL  runtime/ranks/backends/nccl/ is built (needs CUDA and NCCL >= 2.18, for
#                   ncclCommSplit and ncclGetLastError)
#   RANKS_NCCL_STATUS  one line for `ranks --version` and `ranks matrix`: what was built, or why not
# libranks opens cudart when a process first uses a cuda tensor; cudart and libnccl are linked
# only to libranks_nccl.so (loaded when a process asks for nccl), and no public header includes
# theirs, so consumers of the installed package need neither to build, and libnccl only to run on
# nccl. Only the files that call CUDA get its include directory, so a CUDA upgrade does not rebuild
# the rest of the library.

set(RANKS_HAS_CUDA 0)
set(RANKS_HAS_NCCL 0)
set(RANKS_NCCL_STATUS "not built")
set(ranks_nccl_dir ${PROJECT_SOURCE_DIR}/runtime/ranks/backends/nccl)

macro(ranks_nccl_missing why)
  set(RANKS_NCCL_STATUS "not built: ${why}")
  if(RANKS_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "ranks: RANKS_WITH_NCCL=ON but ${why}")
  endif()
  message(STATUS "ranks: nccl backend ${RANKS_NCCL_STATUS}")
endmacro()

function(ranks_find_nccl)
  if(RANKS_WITH_NCCL STREQUAL "OFF")
    set(RANKS_NCCL_STATUS "not built: RANKS_WITH_NCCL=OFF" PARENT_SCOPE)
    message(STATUS "ranks: nccl backend off (RANKS_WITH_NCCL=OFF)")
    return()
  endif()
  # CUDA 13 installs under /usr/local/cuda without putting nvcc on PATH.
  if(NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(NOT CUDAToolkit_FOUND)
    ranks_nccl_missing("the CUDA toolkit was not found (set CUDAToolkit_ROOT)")
    set(RANKS_NCCL_STATUS ${RANKS_NCCL_STATUS} PARENT_SCOPE)
    return()
  endif()
  set(RANKS_HAS_CUDA 1 PARENT_SCOPE)
  set(RANKS_CUDA_INCLUDE_DIRS ${CUDAToolkit_INCLUDE_DIRS} CACHE INTERNAL "for tests/")
  find_library(RANKS_CUDART_LIBRARY cudart HINTS ${CUDAToolkit_LIBRARY_DIR})  # for tests/bench
  set(RANKS_CUDA_VERSION ${CUDAToolkit_VERSION} PARENT_SCOPE)
  # libranks opens the runtime on first use (runtime/ranks/detail/cuda.cpp says why): only its
  # header at build time, and where to find the library built against.
  target_link_libraries(ranks PRIVATE ${CMAKE_DL_LIBS})
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/runtime/ranks/detail/cuda.cpp APPEND PROPERTY
               INCLUDE_DIRECTORIES ${CUDAToolkit_INCLUDE_DIRS})
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/runtime/ranks/detail/cuda.cpp APPEND PROPERTY
               COMPILE_DEFINITIONS RANKS_CUDART_SONAME="libcudart.so.${CUDAToolkit_VERSION_MAJOR}"
               RANKS_CUDART_DIR="${CUDAToolkit_LIBRARY_DIR}")

  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME
            PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME
               PATH_SUFFIXES lib lib64)
  if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
    ranks_nccl_missing("nccl.h or libnccl was not found (set NCCL_HOME); CUDA ${CUDAToolkit_VERSION} tensors are built")
    set(RANKS_NCCL_STATUS ${RANKS_NCCL_STATUS} PARENT_SCOPE)
    return()
  endif()
  file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h nccl_version_lines
       REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  foreach(part MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${part} +([0-9]+)" _ "${nccl_version_lines}")
    set(nccl_${part} ${CMAKE_MATCH_1})
  endforeach()
  set(nccl_version ${nccl_MAJOR}.${nccl_MINOR}.${nccl_PATCH})
  if(nccl_version VERSION_LESS 2.18)
    ranks_nccl_missing("NCCL ${nccl_version} at ${NCCL_INCLUDE_DIR} is older than 2.18 (no ncclCommSplit)")
    set(RANKS_NCCL_STATUS ${RANKS_NCCL_STATUS} PARENT_SCOPE)
    return()
  endif()
  if(NOT EXISTS ${ranks_nccl_dir}/backend.cpp)
    ranks_nccl_missing("its sources are missing")
    set(RANKS_NCCL_STATUS ${RANKS_NCCL_STATUS} PARENT_SCOPE)
    return()
  endif()
  file(GLOB sources CONFIGURE_DEPENDS ${ranks_nccl_dir}/*.cpp)
  ranks_backend_library(nccl ${sources})
  target_include_directories(ranks_nccl PRIVATE ${CUDAToolkit_INCLUDE_DIRS} ${NCCL_INCLUDE_DIR})
  target_link_libraries(ranks_nccl PRIVATE CUDA::cudart ${NCCL_LIBRARY})
  set(RANKS_HAS_NCCL 1 PARENT_SCOPE)
  set(RANKS_NCCL_STATUS "built (NCCL ${nccl_version}, CUDA ${CUDAToolkit_VERSION})" PARENT_SCOPE)
  message(STATUS "ranks: nccl backend built (NCCL ${nccl_version}, CUDA ${CUDAToolkit_VERSION})")
endfunction()

ranks_find_nccl()
