# peakcast_module(NAME DEPS ...): a static library from every .cpp in src/NAME/ (recursively).
# Modules own their folder; adding a source file needs no edit here.
function(peakcast_module name)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(NOT srcs)
    add_library(peakcast_${name} INTERFACE)
    target_include_directories(peakcast_${name} INTERFACE ${PROJECT_SOURCE_DIR}/include)
    target_link_libraries(peakcast_${name} INTERFACE ${M_DEPS})
  else()
    add_library(peakcast_${name} STATIC ${srcs})
    target_include_directories(peakcast_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include
                               PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(peakcast_${name} PUBLIC ${M_DEPS})
  endif()
  add_library(peakcast::${name} ALIAS peakcast_${name})
endfunction()

# peakcast_tests(NAME DEPS ...): one gtest binary per folder tests/NAME/, every *_test.cpp in it.
function(peakcast_tests name)
  cmake_parse_arguments(T "" "" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${name}/*_test.cpp)
  if(NOT srcs)
    return()
  endif()
  add_executable(${name}_tests ${srcs})
  target_include_directories(${name}_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name}_tests PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main GTest::gmock rapidcheck)
  target_compile_definitions(${name}_tests PRIVATE
    PEAKCAST_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    PEAKCAST_BINARY_DIR="${CMAKE_BINARY_DIR}")
  gtest_discover_tests(${name}_tests
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 120  # loading LibTorch on a busy machine takes longer than the 5 s default
    PROPERTIES LABELS ${name})
endfunction()
