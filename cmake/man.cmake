# SPDX-License-Identifier: MIT
# The manual pages (included from cmake/install.cmake). tessera(1) is man/tessera.1.in with
# the version filled in; tessera(3) is man/tessera.3.in with its option and control tables
# filled from docs/options.md and docs/ctl.md by man/man_tables.c (tests keep those two
# documents in step with the library, and the docs.man test checks the installed page
# names every option and control the library has).
set(TESSERA_MAN_DIR ${PROJECT_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${TESSERA_MAN_DIR})

configure_file(${PROJECT_SOURCE_DIR}/man/tessera.1.in ${TESSERA_MAN_DIR}/tessera.1 @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/man/tessera.3.in ${TESSERA_MAN_DIR}/tessera.3.tables @ONLY)

add_executable(tessera-man-tables ${PROJECT_SOURCE_DIR}/man/man_tables.c)
target_compile_options(tessera-man-tables PRIVATE ${TESSERA_WARNINGS})
add_custom_command(OUTPUT ${TESSERA_MAN_DIR}/tessera.3
  COMMAND tessera-man-tables ${TESSERA_MAN_DIR}/tessera.3.tables
          ${PROJECT_SOURCE_DIR}/docs/options.md ${PROJECT_SOURCE_DIR}/docs/ctl.md
          ${TESSERA_MAN_DIR}/tessera.3
  DEPENDS tessera-man-tables ${TESSERA_MAN_DIR}/tessera.3.tables
          ${PROJECT_SOURCE_DIR}/docs/options.md ${PROJECT_SOURCE_DIR}/docs/ctl.md
  COMMENT "Generating tessera(3) from man/tessera.3.in, docs/options.md and docs/ctl.md")
add_custom_target(tessera-man ALL DEPENDS ${TESSERA_MAN_DIR}/tessera.3)

install(FILES ${TESSERA_MAN_DIR}/tessera.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${TESSERA_MAN_DIR}/tessera.3 DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
