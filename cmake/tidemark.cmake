# tidemark_library(NAME [DEPENDS targets...] [EXCLUDE files...]): the one static library of the calling folder,
# from its own .cpp files (not those of sub-folders, which are libraries of their own). Its
# DEPENDS are the only layers and packages it may use (docs/architecture.md); scripts/check-layers
# checks the includes against the same arrows.
function(tidemark_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "DEPENDS;EXCLUDE")
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  foreach(excluded IN LISTS arg_EXCLUDE)
    list(REMOVE_ITEM sources ${CMAKE_CURRENT_SOURCE_DIR}/${excluded})
  endforeach()
  add_library(${name} STATIC ${sources})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${TIDEMARK_WARNINGS})
  target_link_libraries(${name} PUBLIC ${arg_DEPENDS})
endfunction()

# tidemark_test_binary(NAME FOLDER deps...): one gtest binary from every .cpp under FOLDER
# (its sub-folders mirror the source tree: tests/unit/core/plan_test.cpp tests pipeline/core).
# Each test is labelled with its binary's name: `scripts/test --binaries` selects by it.
function(tidemark_test_binary name folder)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cpp)
  add_executable(${name} ${sources})
  target_compile_options(${name} PRIVATE ${TIDEMARK_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARGN} GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600 LABELS ${name})
endfunction()
