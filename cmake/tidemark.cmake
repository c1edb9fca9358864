# tidemark_library(NAME [DEPENDS targets...] [TEST_DEPENDS targets...] [EXCLUDE files...]): the one
# static library of the calling folder, from its own .cpp files (not those of sub-folders, which
# are libraries of their own). Its DEPENDS are the only layers and packages it may use
# (docs/architecture.md): scripts/check-layers holds the includes to the arrows these make (see
# tidemark_write_layers), and the library's tests (tidemark_library_tests) prove the link.
function(tidemark_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "DEPENDS;EXCLUDE;TEST_DEPENDS")
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(excluded IN LISTS arg_EXCLUDE)
    list(REMOVE_ITEM sources ${CMAKE_CURRENT_SOURCE_DIR}/${excluded})
  endforeach()
  add_library(${name} STATIC ${sources})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${TIDEMARK_WARNINGS})
  target_link_libraries(${name} PUBLIC ${arg_DEPENDS})
  tidemark_layer(${name} ${arg_DEPENDS})
  tidemark_library_tests(${name} ${arg_TEST_DEPENDS})
endfunction()

# tidemark_layer(NAME DEPENDS...): records the calling folder as the layer of library NAME and
# the project's libraries among DEPENDS as the layers it may include.
function(tidemark_layer name)
  set_property(GLOBAL APPEND PROPERTY TIDEMARK_LAYERS ${name})
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set_property(GLOBAL PROPERTY TIDEMARK_LAYER_FOLDER_${name} ${folder})
  set(layers)
  foreach(dependency IN LISTS ARGN)
    if(dependency MATCHES "^tidemark_")
      list(APPEND layers ${dependency})
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY TIDEMARK_LAYER_DEPENDS_${name} ${layers})
endfunction()

# tidemark_write_layers(FILE): one line per library, "folder: the folders it may include" (those
# of every library it depends on, directly or through another), read by scripts/check-layers.
# Called once every library is declared.
function(tidemark_write_layers file)
  get_property(names GLOBAL PROPERTY TIDEMARK_LAYERS)
  set(lines)
  set(written)
  foreach(name IN LISTS names)
    get_property(folder GLOBAL PROPERTY TIDEMARK_LAYER_FOLDER_${name})
    # A second library of one folder (serve's embedded console files) is a part of the first.
    if(folder IN_LIST written)
      continue()
    endif()
    list(APPEND written ${folder})
    get_property(pending GLOBAL PROPERTY TIDEMARK_LAYER_DEPENDS_${name})
    set(reached)
    while(pending)
      list(POP_FRONT pending dependency)
      if(dependency IN_LIST reached)
        continue()
      endif()
      get_property(declared GLOBAL PROPERTY TIDEMARK_LAYER_FOLDER_${dependency} SET)
      if(NOT declared)
        message(FATAL_ERROR "${name} depends on ${dependency}, which is not a library of the project")
      endif()
      list(APPEND reached ${dependency})
      get_property(next GLOBAL PROPERTY TIDEMARK_LAYER_DEPENDS_${dependency})
      list(APPEND pending ${next})
    endwhile()
    set(allowed)
    foreach(dependency IN LISTS reached)
      get_property(dependency_folder GLOBAL PROPERTY TIDEMARK_LAYER_FOLDER_${dependency})
      if(NOT dependency_folder STREQUAL folder AND NOT dependency_folder IN_LIST allowed)
        list(APPEND allowed ${dependency_folder})
      endif()
    endforeach()
    list(SORT allowed)
    list(JOIN allowed " " allowed)
    string(APPEND lines "${folder}: ${allowed}\n")
  endforeach()
  file(WRITE ${file} "${lines}")
endfunction()

# tidemark_library_tests(NAME [TEST_DEPENDS...]): the unit tests beside library NAME (its
# folder's tests/*.cpp: pure code, no database, no process) as one binary NAME_tests (without
# the tidemark_ prefix) that links the whole library and only what it declares, so that a symbol
# the library uses from an undeclared layer fails this link instead of linking by luck in a
# binary that holds everything. TEST_DEPENDS are what the tests themselves use besides. Each
# test is labelled with its binary's name and with unit_tests, which also names the target
# that builds them all (`scripts/test --binaries unit_tests`).
function(tidemark_library_tests name)
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/tests/*.cpp)
  if(NOT sources OR TIDEMARK_FUZZ)
    return()
  endif()
  string(REGEX REPLACE "^tidemark_" "" binary ${name})
  set(binary ${binary}_tests)
  add_executable(${binary} ${sources})
  target_compile_options(${binary} PRIVATE ${TIDEMARK_WARNINGS})
  get_target_property(type ${name} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    set(library "$<LINK_LIBRARY:WHOLE_ARCHIVE,${name}>")
  else()
    set(library ${name})  # header-only: nothing to link whole
  endif()
  target_link_libraries(${binary} PRIVATE ${library} ${ARGN} GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${binary} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600 LABELS "unit_tests;${binary}")
  add_dependencies(unit_tests ${binary})
endfunction()

# tidemark_test_binary(NAME FOLDER deps...): one gtest binary from every .cpp under FOLDER
# (its sub-folders mirror the source tree: tests/integration/store/... tests pipeline/store).
# Each test is labelled with its binary's name: `scripts/test --binaries` selects by it.
function(tidemark_test_binary name folder)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cpp)
  add_executable(${name} ${sources})
  target_compile_options(${name} PRIVATE ${TIDEMARK_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARGN} GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600 LABELS ${name})
endfunction()
