# SPDX-License-Identifier: MIT
# Man pages.  railwire(1) and railwire-COMMAND(1) are generated at build time
# by help2man from the built binary's own --help (man/help-text.sh), plus one
# include file per page (man/PAGE.h2m) for sections --help has no room for,
# so --help and the page cannot disagree: a new option shows up in both.
# railwire(7) is written by hand (man/railwire.7).
#
# Output: ${RAILWIRE_MAN_DIR}/man1, man7 (usable as a MANPATH entry), and
# gzip'd copies in man-gz/ that are installed into CMAKE_INSTALL_MANDIR.
set(RAILWIRE_MAN_DIR ${PROJECT_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${RAILWIRE_MAN_DIR}/man1 ${RAILWIRE_MAN_DIR}/man7)
configure_file(${PROJECT_SOURCE_DIR}/man/railwire.7 ${RAILWIRE_MAN_DIR}/man7/railwire.7 COPYONLY)

find_program(HELP2MAN_EXECUTABLE help2man)
find_program(GZIP_EXECUTABLE gzip)
set(RAILWIRE_MAN_PAGES "")
if(NOT TARGET railwire_cli)
  return()
elseif(NOT HELP2MAN_EXECUTABLE)
  message(WARNING "railwire: help2man not found (apt-get install help2man): "
                  "railwire(1) and railwire-COMMAND(1) are not built or installed")
else()
  # page | subcommand | NAME line
  set(_pages
    "railwire||move bytes between machines' memory over several network rails at once"
    "railwire-serve|serve|publish read-only layers or a read-write arena to railwire clients"
    "railwire-bench|bench|measure striped READ/WRITE throughput and latency against a server"
    "railwire-decode|decode|decode a captured railwire handshake message to JSON"
    "railwire-devices|devices|list RDMA devices, ports and GIDs, and the GID railwire would use")
  foreach(p IN LISTS _pages)
    string(REPLACE "|" ";" p "${p}")
    list(GET p 0 page)
    list(GET p 1 sub)
    list(GET p 2 what)
    set(out ${RAILWIRE_MAN_DIR}/man1/${page}.1)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E env RW_CLI=$<TARGET_FILE:railwire_cli> RW_SUB=${sub}
              RW_PAGE=${page}
              ${HELP2MAN_EXECUTABLE} --no-info --section=1 "--name=${what}"
              --source=railwire "--manual=railwire manual"
              --include=${PROJECT_SOURCE_DIR}/man/${page}.h2m
              --output=${out} ${PROJECT_SOURCE_DIR}/man/help-text.sh
      DEPENDS railwire_cli ${PROJECT_SOURCE_DIR}/man/help-text.sh
              ${PROJECT_SOURCE_DIR}/man/${page}.h2m
      COMMENT "help2man: ${page}(1)"
      VERBATIM)
    list(APPEND RAILWIRE_MAN_PAGES ${out})
  endforeach()
endif()
list(APPEND RAILWIRE_MAN_PAGES ${RAILWIRE_MAN_DIR}/man7/railwire.7)

# Debian installs man pages compressed (gzip -n: no name or time inside).
set(_installed "")
foreach(src IN LISTS RAILWIRE_MAN_PAGES)
  get_filename_component(_name ${src} NAME)
  get_filename_component(_dir ${src} DIRECTORY)
  get_filename_component(_sect ${_dir} NAME)
  if(GZIP_EXECUTABLE)
    set(gz ${PROJECT_BINARY_DIR}/man-gz/${_sect}/${_name}.gz)
    add_custom_command(OUTPUT ${gz}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man-gz/${_sect}
      COMMAND sh -c "${GZIP_EXECUTABLE} -9n -c \"$0\" > \"$1\"" ${src} ${gz}
      DEPENDS ${src} VERBATIM)
    list(APPEND _installed ${gz})
    install(FILES ${gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/${_sect} COMPONENT tools)
  else()
    install(FILES ${src} DESTINATION ${CMAKE_INSTALL_MANDIR}/${_sect} COMPONENT tools)
  endif()
endforeach()
add_custom_target(railwire_man ALL DEPENDS ${RAILWIRE_MAN_PAGES} ${_installed})
