# Man pages, generated at build time from the docs/ pages (one source of truth) with go-md2man.
# A docs page becomes a man page when its first line reads "# NAME(SECTION) — one-line summary":
# docs/featurize.md → man/featurize.1, docs/FORMAT.md → man/featcache.5. Installed into
# share/man/manSECTION. Without go-md2man (Debian: go-md2man) the pages are skipped, said at configure.
find_program(FC_GO_MD2MAN go-md2man)
file(GLOB FC_DOC_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
set(FC_MAN_PAGES "")
if(NOT FC_GO_MD2MAN)
  message(STATUS "man pages: go-md2man not found, not built (apt-get install go-md2man)")
  return()
endif()
foreach(page ${FC_DOC_PAGES})
  file(STRINGS ${page} first LIMIT_COUNT 1)
  if(NOT first MATCHES "^# ([a-z][a-z0-9-]*)\\(([1-9])\\)")
    continue()
  endif()
  set(name ${CMAKE_MATCH_1})
  set(section ${CMAKE_MATCH_2})
  set(out ${PROJECT_BINARY_DIR}/man/${name}.${section})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${page} -DOUT=${out} -DMD2MAN=${FC_GO_MD2MAN}
      -DVERSION=${PROJECT_VERSION} -P ${PROJECT_SOURCE_DIR}/cmake/manpage.cmake
    DEPENDS ${page} ${PROJECT_SOURCE_DIR}/cmake/manpage.cmake
    COMMENT "man page ${name}(${section})" VERBATIM)
  list(APPEND FC_MAN_PAGES ${out})
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endforeach()
add_custom_target(man ALL DEPENDS ${FC_MAN_PAGES})
