# All third-party dependencies come from Debian packages; scripts/dev.sh installs them.

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()

find_package(Threads REQUIRED)

# Cap'n Proto: schemas are compiled with capnp_generate_cpp.
find_package(CapnProto REQUIRED)

# RocksDB (librocksdb-dev ships a CMake config).
find_package(RocksDB REQUIRED)
# Link the shared library: the static one drags in every compression library it was built with.
if(TARGET RocksDB::rocksdb-shared)
  set(CUMULUS_ROCKSDB RocksDB::rocksdb-shared)
else()
  set(CUMULUS_ROCKSDB RocksDB::rocksdb)
endif()

# Gloo (libgloo-dev ships a CMake config with the target `gloo`): collectives on CPUs.
find_package(Gloo CONFIG REQUIRED)

# CAF 0.17 (libcaf-dev): Debian ships no CMake config, so the imported targets are made here.
find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY caf_core)
find_library(CAF_IO_LIBRARY caf_io)
if(NOT CAF_INCLUDE_DIR OR NOT CAF_CORE_LIBRARY OR NOT CAF_IO_LIBRARY)
  message(FATAL_ERROR "CAF 0.17 not found: install the Debian package libcaf-dev (scripts/dev.sh does)")
endif()
add_library(CAF::core SHARED IMPORTED GLOBAL)
set_target_properties(CAF::core PROPERTIES
  IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
  INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(CAF::io SHARED IMPORTED GLOBAL)
set_target_properties(CAF::io PROPERTIES
  IMPORTED_LOCATION ${CAF_IO_LIBRARY}
  INTERFACE_LINK_LIBRARIES CAF::core)

if(CUMULUS_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(CUMULUS_BUILD_BENCH)
  find_package(benchmark QUIET)
endif()

# CUDA and NCCL are optional: AUTO uses them when the toolkit is installed.
set(CUMULUS_HAVE_CUDA OFF)
set(CUMULUS_HAVE_NCCL OFF)
if(NOT CUMULUS_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(CUMULUS_HAVE_CUDA ON)
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
      set(CUMULUS_HAVE_NCCL ON)
      add_library(NCCL::nccl SHARED IMPORTED GLOBAL)
      set_target_properties(NCCL::nccl PROPERTIES
        IMPORTED_LOCATION ${NCCL_LIBRARY}
        INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
    endif()
  elseif(CUMULUS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "-DCUMULUS_CUDA=ON but no CUDA toolkit was found (FindCUDAToolkit)")
  endif()
endif()
message(STATUS "cumulus: CUDA ${CUMULUS_HAVE_CUDA}, NCCL ${CUMULUS_HAVE_NCCL}")

# yaml-cpp (libyaml-cpp-dev ships a CMake config; the target is `yaml-cpp`): the autoscaler's
# cluster file (runtime/autoscaler/cluster_config.h).
find_package(yaml-cpp CONFIG REQUIRED)
