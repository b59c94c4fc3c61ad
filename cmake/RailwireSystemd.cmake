# SPDX-License-Identifier: MIT
# The systemd unit railwire-serve@.service and its example environment file.
# The unit goes under PREFIX/lib/systemd/system (systemd reads /usr/lib and
# /usr/local/lib there); its ExecStart is the installed binary.
set(RAILWIRE_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
    "where the systemd unit is installed, relative to CMAKE_INSTALL_PREFIX")
set(RAILWIRE_SYSTEMD_DIR ${PROJECT_BINARY_DIR}/systemd)
set(RAILWIRE_SERVE_BIN ${CMAKE_INSTALL_FULL_BINDIR}/railwire)
configure_file(${PROJECT_SOURCE_DIR}/dist/systemd/railwire-serve@.service.in
  ${RAILWIRE_SYSTEMD_DIR}/railwire-serve@.service @ONLY)
install(FILES ${RAILWIRE_SYSTEMD_DIR}/railwire-serve@.service
  DESTINATION ${RAILWIRE_SYSTEMD_UNITDIR} COMPONENT tools)
install(FILES ${PROJECT_SOURCE_DIR}/dist/systemd/railwire-serve.env
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/railwire-tools/examples COMPONENT tools)
