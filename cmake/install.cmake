# SPDX-License-Identifier: MIT
# Installation, packaging and the launcher (included from the top-level CMakeLists.txt).
#
# Installs under CMAKE_INSTALL_PREFIX (or the prefix given to `cmake --install --prefix`):
#   lib/libtessera.so*, lib/libtessera.a        the libraries (soname libtessera.so.0)
#   include/tessera.h                           the public header
#   lib/pkgconfig/tessera.pc                    pkg-config --cflags --libs tessera
#   lib/cmake/tessera/                          find_package(tessera) -> tessera::tessera,
#                                               tessera::tessera_static
#   bin/tessera                                 the launcher (tools/tessera.in)
#   libexec/tessera/tessera-classes             the size-class table, run by `tessera classes`
#   libexec/tessera/tessera-{advise,tune,plot}  the helper scripts in tools/, when present
#   share/man/man1/tessera.1, man3/tessera.3    the manual pages (man/)
#   share/doc/tessera/                          README.md, LICENSE, docs/*.md
# It also writes a build-tree launcher, <build>/tessera, that preloads <build>/libtessera.so.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tessera)
set(TESSERA_TOOL_DIR ${CMAKE_INSTALL_LIBEXECDIR}/tessera)

# The classes tool finds libtessera.so.0 next to itself once installed.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_tessera_rpath "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _tessera_rel "/p/${TESSERA_TOOL_DIR}" "/p/${CMAKE_INSTALL_LIBDIR}")
  set(_tessera_rpath "$ORIGIN/${_tessera_rel}")
endif()
set_target_properties(tessera-classes PROPERTIES INSTALL_RPATH "${_tessera_rpath}")

install(TARGETS tessera tessera_static EXPORT tesseraTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS tessera-classes RUNTIME DESTINATION ${TESSERA_TOOL_DIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/tessera.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The launcher's helper commands written in Python (tessera advise, tune, plot); each is
# installed once it exists in tools/.
foreach(_helper advise tune plot)
  if(EXISTS ${PROJECT_SOURCE_DIR}/tools/tessera-${_helper})
    install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/tessera-${_helper} DESTINATION ${TESSERA_TOOL_DIR})
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/man.cmake)

# The documentation, with docs/ kept beside the README so its links still work.
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
  FILES_MATCHING PATTERN "*.md" PATTERN "*.svg")

# CMake package: exported targets are relocatable (paths relative to the package file).
install(EXPORT tesseraTargets NAMESPACE tessera:: DESTINATION ${TESSERA_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tesseraConfig.cmake INSTALL_DESTINATION ${TESSERA_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a minor release may change the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tesseraConfig.cmake
  ${PROJECT_BINARY_DIR}/tesseraConfigVersion.cmake DESTINATION ${TESSERA_CMAKE_DIR})

# tessera.pc and bin/tessera hold absolute paths, so they are written at install time,
# when the prefix (possibly `cmake --install --prefix DIR`) is known.
configure_file(${CMAKE_CURRENT_LIST_DIR}/install_time.cmake.in
  ${PROJECT_BINARY_DIR}/tessera_install_time.cmake @ONLY)
install(SCRIPT ${PROJECT_BINARY_DIR}/tessera_install_time.cmake)

# The build-tree launcher: <build>/tessera runs a command with <build>/libtessera.so.
if(CMAKE_VERSION VERSION_LESS 3.20)  # no file(GENERATE FILE_PERMISSIONS): default paths
  set(TESSERA_LAUNCHER_LIB "${PROJECT_BINARY_DIR}/libtessera.so")
  set(TESSERA_LAUNCHER_TOOLDIRS "${PROJECT_BINARY_DIR}:${PROJECT_SOURCE_DIR}/tools")
  configure_file(${PROJECT_SOURCE_DIR}/tools/tessera.in ${PROJECT_BINARY_DIR}/tessera @ONLY)
else()
  set(TESSERA_LAUNCHER_LIB "$<TARGET_LINKER_FILE:tessera>")
  set(TESSERA_LAUNCHER_TOOLDIRS "$<TARGET_FILE_DIR:tessera-classes>:${PROJECT_SOURCE_DIR}/tools")
  configure_file(${PROJECT_SOURCE_DIR}/tools/tessera.in
    ${PROJECT_BINARY_DIR}/tessera_launcher.genex @ONLY)
  file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/tessera
    INPUT ${PROJECT_BINARY_DIR}/tessera_launcher.genex
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                     WORLD_READ WORLD_EXECUTE)
endif()

if(TESSERA_BUILD_TESTS)
  enable_testing()
  find_program(TESSERA_BASH bash)
  if(NOT TESSERA_BASH)
    set(TESSERA_BASH bash)
  endif()
  # Installs the build into a temporary prefix and uses it the three documented ways:
  # pkg-config, find_package and the launcher.
  add_test(NAME install_and_consume
    COMMAND ${TESSERA_BASH} ${PROJECT_SOURCE_DIR}/demo/test-install ${PROJECT_BINARY_DIR})
  # The build-tree launcher's options and environment handling.
  add_test(NAME launcher
    COMMAND ${TESSERA_BASH} ${PROJECT_SOURCE_DIR}/demo/test-launcher ${PROJECT_BINARY_DIR}/tessera)
  # --stats json / --stats text print tessera's statistics at exit.
  add_test(NAME launcher_stats
    COMMAND ${TESSERA_BASH} ${PROJECT_SOURCE_DIR}/demo/test-launcher ${PROJECT_BINARY_DIR}/tessera stats)
  # The README's main job, small: both allocators give the same output.
  add_test(NAME demo_quick
    COMMAND ${TESSERA_BASH} ${PROJECT_SOURCE_DIR}/demo/run --quick --no-build
            --build-dir ${PROJECT_BINARY_DIR})
  set_tests_properties(install_and_consume launcher launcher_stats demo_quick PROPERTIES
    TIMEOUT 300)
endif()
