# `cmake --install build [--prefix DIR]` puts in place what a user's own program needs:
#   bin/cumulus                         the command line (head, nodes, jobs)
#   lib/libcumulus.so                   the runtime
#   lib/libcumulus_rocksdb.so           RocksDB and the stores on it, loaded when a store opens
#   lib/libcumulus_gloo.so              Gloo, loaded when a collective group is joined
#   include/cumulus/...                 the public headers (api/include/cumulus)
#   lib/cmake/Cumulus/                  the CMake package: find_package(Cumulus), Cumulus::cumulus
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Installed programs find libcumulus.so next to them, wherever the prefix is.
set_target_properties(cumulus PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(TARGETS cumulus RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS cumulus_shared EXPORT CumulusTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS cumulus_rocksdb cumulus_gloo LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/api/include/cumulus
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

set(CUMULUS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Cumulus)
install(EXPORT CumulusTargets NAMESPACE Cumulus:: DESTINATION ${CUMULUS_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/CumulusConfig.cmake.in
  ${CMAKE_BINARY_DIR}/CumulusConfig.cmake INSTALL_DESTINATION ${CUMULUS_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/CumulusConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/CumulusConfig.cmake ${CMAKE_BINARY_DIR}/CumulusConfigVersion.cmake
  DESTINATION ${CUMULUS_CMAKE_DIR})
