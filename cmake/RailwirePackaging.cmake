# SPDX-License-Identifier: MIT
# Debian packages through CPack, one per install component:
#   librailwire1     lib    the shared library (librailwire.so.1*)
#   librailwire-dev  dev    headers, librailwire.so, librailwire.a, CMake and
#                           pkg-config files
#   railwire-tools   tools  the railwire command, the systemd unit, man pages
# Build them from a tree configured with CMAKE_INSTALL_PREFIX=/usr:
# packaging/build-debs.sh does it (docs/packages.md).
set(RAILWIRE_DEB_MAINTAINER "railwire developers <railwire@invalid>" CACHE STRING
    "Maintainer field of the Debian packages")
set(RAILWIRE_DEB_RELEASE 1 CACHE STRING "Debian revision of the packages")
set(_deb_version "${PROJECT_VERSION}-${RAILWIRE_DEB_RELEASE}")
set(RAILWIRE_DEB_NAME_lib librailwire${PROJECT_VERSION_MAJOR})
set(RAILWIRE_DEB_NAME_dev librailwire-dev)
set(RAILWIRE_DEB_NAME_tools railwire-tools)

foreach(c lib dev tools)
  install(FILES ${PROJECT_SOURCE_DIR}/LICENSE RENAME copyright COMPONENT ${c}
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${RAILWIRE_DEB_NAME_${c}})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME railwire)
set(CPACK_PACKAGE_VENDOR railwire)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${RAILWIRE_DEB_MAINTAINER})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL lib dev tools)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${RAILWIRE_DEB_RELEASE})
# Runtime dependencies from the ELF files (dpkg-shlibdeps), and a shlibs
# file so that packages built against librailwire1 depend on it.  CPack
# gives librailwire1 a postinst/postrm that run ldconfig.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME ${RAILWIRE_DEB_NAME_lib})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
# Descriptions: the first line is the package's synopsis.
string(CONCAT CPACK_DEBIAN_LIB_DESCRIPTION
  "striped memory transfers over several network rails (shared library)\n"
  "A client brings up N parallel reliable connections across N NICs and every\n"
  "one-sided READ or WRITE is striped across them, with failover when a rail\n"
  "dies.  Runs on RDMA (libibverbs) or a software transport over TCP.")

set(_dev_depends "${RAILWIRE_DEB_NAME_lib} (= ${_deb_version}), pkgconf | pkg-config")
if(RAILWIRE_HAVE_VERBS)
  # railwire.pc and railwireConfig.cmake require libibverbs (the static
  # archive links it).
  string(APPEND _dev_depends ", libibverbs-dev")
endif()
if(RAILWIRE_HAVE_TLS)
  # ... and OpenSSL when TLS is built.
  string(APPEND _dev_depends ", libssl-dev")
endif()
if(RAILWIRE_HAVE_HWLOC)
  # Likewise hwloc (NIC/GPU topology); its static link needs libudev.
  string(APPEND _dev_depends ", libhwloc-dev, libudev-dev")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_NAME ${RAILWIRE_DEB_NAME_dev})
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS ${_dev_depends})
string(CONCAT CPACK_DEBIAN_DEV_DESCRIPTION
  "striped memory transfers over several network rails (development files)\n"
  "Headers, the static library, and the CMake (find_package(railwire CONFIG))\n"
  "and pkg-config (railwire.pc) files for building against librailwire.")

# The command links the library statically (it uses internal codecs), so
# dpkg-shlibdeps finds no need for librailwire1; the dependency keeps the
# command and the library on a host at one release.
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME ${RAILWIRE_DEB_NAME_tools})
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${RAILWIRE_DEB_NAME_lib} (= ${_deb_version})")
string(CONCAT CPACK_DEBIAN_TOOLS_DESCRIPTION
  "railwire command-line tool, systemd unit and man pages\n"
  "railwire serve publishes read-only layers or a read-write arena;\n"
  "railwire bench measures striped READ/WRITE throughput; railwire decode and\n"
  "railwire devices help debug handshakes and RDMA ports.")

if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "railwire: CPack packages of this tree would install under "
                 "${CMAKE_INSTALL_PREFIX}; Debian packages come from packaging/build-debs.sh")
endif()
include(CPack)
