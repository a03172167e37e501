# find_package(pypto CONFIG REQUIRED) gives pypto::pypto (and pypto::cann, below): PyPTO's C++ API (#include <pypto/pypto.h>),
# the core library (recorder, passes, runtime, kernel cache) and what it needs (threads, dl).
# This file lives in <pypto package>/lib/cmake/pypto; `python -m pypto --cmake-dir` prints it.
cmake_minimum_required(VERSION 3.20)
get_filename_component(_pypto_pkg "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
include(CMakeFindDependencyMacro)
find_dependency(Threads)
if(NOT TARGET pypto::pypto)
  add_library(pypto::pypto STATIC IMPORTED)
  set_target_properties(pypto::pypto PROPERTIES
    IMPORTED_LOCATION "${_pypto_pkg}/lib/libpypto_core.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_pypto_pkg}/include"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}"
    # Generated kernels include the PTO headers from the package (registered by pypto.h).
    INTERFACE_COMPILE_DEFINITIONS "PYPTO_PACKAGE_INCLUDE_DIR=\"${_pypto_pkg}/include\""
    INTERFACE_COMPILE_FEATURES cxx_std_20)
endif()
# pypto::cann: the same, and CANN PyPTO's header names (#include "tilefwk/tilefwk.h", namespace
# npu::tile_fwk) for sources written against CANN's C++ front end.
if(NOT TARGET pypto::cann)
  add_library(pypto::cann INTERFACE IMPORTED)
  set_target_properties(pypto::cann PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_pypto_pkg}/include/cann"
    INTERFACE_LINK_LIBRARIES "pypto::pypto")
endif()
set(pypto_FOUND TRUE)
