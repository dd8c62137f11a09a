# polyinfer_add_backend_plugin(<name> [TARGET <target>] [OUTPUT_DIR <dir>] [NO_INSTALL]
#                              SOURCES <files>...)
#
# Builds a backend plugin libpolyinfer-<name>.so: a MODULE library that shares nothing with
# the host but include/polyinfer/backend/abi.h. Symbols are hidden by default, so the plugin
# must mark its entry point `polyinfer_backend_entry` with
# __attribute__((visibility("default"))); nothing else leaks into the host's symbol space.
#
# By default the plugin lands beside the `polyinfer` executable (build/bin), where the
# registry looks, and installs into <prefix>/lib/polyinfer with an $ORIGIN RPATH so that
# libraries it ships beside itself are found from any prefix. TARGET defaults to
# polyinfer-<name>; tests pass their own TARGET, OUTPUT_DIR and NO_INSTALL.
function(polyinfer_add_backend_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_INSTALL" "TARGET;OUTPUT_DIR" "SOURCES")
  if(NOT arg_TARGET)
    set(arg_TARGET polyinfer-${name})
  endif()
  if(NOT arg_OUTPUT_DIR)
    set(arg_OUTPUT_DIR ${CMAKE_RUNTIME_OUTPUT_DIRECTORY})
  endif()
  add_library(${arg_TARGET} MODULE ${arg_SOURCES})
  target_include_directories(${arg_TARGET} PRIVATE ${PROJECT_SOURCE_DIR}/include)
  set_target_properties(${arg_TARGET} PROPERTIES
    OUTPUT_NAME polyinfer-${name}
    PREFIX lib
    SUFFIX .so
    LIBRARY_OUTPUT_DIRECTORY ${arg_OUTPUT_DIR}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "$ORIGIN")
  if(NOT arg_NO_INSTALL)
    install(TARGETS ${arg_TARGET} LIBRARY DESTINATION ${POLYINFER_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
