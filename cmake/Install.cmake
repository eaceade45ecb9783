# `cmake --install build --prefix P` gives P/lib/cmake/ranks/ranksConfig.cmake, so outside projects
# write find_package(ranks CONFIG REQUIRED) and link ranks::ranks.
include(CMakePackageConfigHelpers)

install(TARGETS ranks EXPORT ranksTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})  # includes: the target's INSTALL_INTERFACE
# The installed headers are exactly include/ranks/: the API, the simulator's programmatic
# interface (sim.hpp, the cost model, calibration), the backend registry, and what those include.
# Everything else (detail/, the backends' own headers with <mpi.h>, <gloo/...>, the simulator's
# engine with Boost.Fiber) stays beside its sources in runtime/ and sim/ and is never installed.
# tests/consumer/run.sh compiles each installed header on its own.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ranks DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
# The one generated header: what this build has (RANKS_HAS_GLOO, ...).
install(FILES ${PROJECT_BINARY_DIR}/generated/ranks/config.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ranks)
install(EXPORT ranksTargets NAMESPACE ranks:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ranks)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ranksConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ranksConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ranks)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ranksConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ranksConfig.cmake ${PROJECT_BINARY_DIR}/ranksConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ranks)
