# SPDX-License-Identifier: MIT
# What operators install besides the library: man pages, the systemd unit,
# the Debian packages, and their tests (tests/ops/).  Included last from the
# top-level CMakeLists.txt, after every install() rule.
include(${CMAKE_CURRENT_LIST_DIR}/RailwireMan.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/RailwireSystemd.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/RailwirePackaging.cmake)
if(RAILWIRE_TESTS AND EXISTS ${PROJECT_SOURCE_DIR}/tests/ops/CMakeLists.txt)
  add_subdirectory(${PROJECT_SOURCE_DIR}/tests/ops ${PROJECT_BINARY_DIR}/tests/ops)
endif()
