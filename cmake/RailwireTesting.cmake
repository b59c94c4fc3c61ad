# SPDX-License-Identifier: MIT
# railwire_add_test(NAME SOURCES a.c b.c LIBS x y [TIMEOUT s] [LABELS l])
# One Criterion executable per module, registered with ctest.
find_library(CRITERION_LIB criterion REQUIRED)
find_path(CRITERION_INCLUDE criterion/criterion.h REQUIRED)
function(railwire_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${CRITERION_INCLUDE}
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${T_LIBS} ${CRITERION_LIB} Threads::Threads)
  target_compile_definitions(${name} PRIVATE
    RAILWIRE_SOURCE_DIR="${PROJECT_SOURCE_DIR}" RAILWIRE_BINARY_DIR="${PROJECT_BINARY_DIR}")
  # --jobs 1: tests that open sockets and threads stay deterministic on 2 cores.
  add_test(NAME ${name} COMMAND ${name} --jobs 1 --verbose=0)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT})
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
