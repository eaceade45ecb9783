# `cmake --install build --prefix P` gives P/lib/cmake/ranks/ranksConfig.cmake, so outside projects
# write find_package(ranks CONFIG REQUIRED) and link ranks::ranks.
include(CMakePackageConfigHelpers)

install(TARGETS ranks EXPORT ranksTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})  # includes: the target's INSTALL_INTERFACE
# The simulator's engine, scheduler, stacks and pools are its own business (they include
# Boost.Fiber, which a consumer does not get from ranks::ranks): only sim.hpp, the cost model and
# calibration are public.
foreach(dir runtime/ranks sim/ranks)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ranks
          FILES_MATCHING PATTERN "*.hpp" PATTERN "detail" EXCLUDE PATTERN "backends" EXCLUDE
          REGEX "/sim/(comm|engine|faults|scheduler|stack|trace|work_pool)\\.hpp$" EXCLUDE)
endforeach()
# Of the backends only the registry is public; their own headers include <mpi.h>, <gloo/...>.
install(FILES ${PROJECT_SOURCE_DIR}/runtime/ranks/backends/registry.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ranks/backends)
install(FILES ${PROJECT_BINARY_DIR}/generated/ranks/config.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ranks)
install(EXPORT ranksTargets NAMESPACE ranks:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ranks)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ranksConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ranksConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ranks)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ranksConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ranksConfig.cmake ${PROJECT_BINARY_DIR}/ranksConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ranks)
