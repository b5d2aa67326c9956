# ctest names are CMake lists: a doctest TEST_CASE name with ';' is cut at the
# ';' by doctest_discover_tests, its filter then matches nothing, and the test
# passes having run zero cases. Fails naming every such test case.
file(GLOB_RECURSE sources ${SOURCE_DIR}/tests/*.cpp ${SOURCE_DIR}/tests/*.hpp)
set(bad "")
foreach(f ${sources})
  file(STRINGS ${f} lines REGEX "(TEST_CASE|SUBCASE|TEST_SUITE)\\(\"[^\"]*;")
  foreach(l ${lines})
    string(APPEND bad "\n  ${f}: ${l}")
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "test names must not contain ';' (ctest would run none of their cases):${bad}")
endif()
