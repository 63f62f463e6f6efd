# Sanitizer and fuzzing builds (scripts/sanitize-build.sh, used by
# scripts/test.sh --sanitize and scripts/fuzz.sh). They leave the normal
# build (scripts/build.sh) untouched: every flag below is added only when its
# option is given.
#
# CODEFY_SANITIZE=address,undefined   AddressSanitizer + UndefinedBehaviorSanitizer
# CODEFY_SANITIZE=thread              ThreadSanitizer (the server's tests)
# CODEFY_FUZZ=ON                      the libFuzzer targets in fuzz/ (clang only)
#
# The instrumentation goes into every target of ours, test programs
# included: a test compiled without it would bring its own uninstrumented
# copies of the header templates it shares with the libraries (nlohmann's
# parser, std containers), and the linker keeps the first copy it meets,
# the test's, so those calls would go unchecked. LibTorch, Boost's compiled
# parts and GoogleTest come from Debian uninstrumented; what the sanitizers
# report inside them is suppressed by name, with a reason, in
# tests/sanitizers/*.supp, never by turning a sanitizer off for our code.
set(CODEFY_SANITIZE "" CACHE STRING "Sanitizers for Codefy's code and tests: address,undefined or thread (empty: none)")
option(CODEFY_FUZZ "Build the libFuzzer targets (clang; with CODEFY_SANITIZE=address,undefined)" OFF)

if(CODEFY_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "CODEFY_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++-14")
endif()
if(CODEFY_FUZZ AND NOT CODEFY_SANITIZE MATCHES "address")
  message(FATAL_ERROR "CODEFY_FUZZ goes with CODEFY_SANITIZE=address,undefined")
endif()

if(CODEFY_SANITIZE)
  string(REPLACE "," ";" codefy_sanitizers "${CODEFY_SANITIZE}")
  foreach(s ${codefy_sanitizers})
    if(NOT s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "CODEFY_SANITIZE: '${s}' is not one of address, undefined, thread")
    endif()
  endforeach()
  if("thread" IN_LIST codefy_sanitizers AND "address" IN_LIST codefy_sanitizers)
    message(FATAL_ERROR "CODEFY_SANITIZE: thread cannot be combined with address")
  endif()
  # Frame pointers and line tables: reports with file:line stacks, at a
  # fraction of full debug information's compile and link time.
  add_compile_options(-fsanitize=${CODEFY_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${CODEFY_SANITIZE})
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    add_compile_options(-gline-tables-only)
  else()
    add_compile_options(-g1)
  endif()
  if(CODEFY_FUZZ)
    # Coverage for libFuzzer in every object; only the fuzz program links
    # libFuzzer itself (-fsanitize=fuzzer), the others get the runtime's
    # no-op coverage hooks and run as usual.
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
  # The server's Beast sessions alone in a unit at -O0, without the
  # precompiled header (made at -O1, so clang would refuse it): under ASan +
  # UBSan this file takes 120 s to compile at -O1 and 35 s at -O0, and was
  # the build's longest step; its work is I/O, which -O0 hardly slows.
  set_source_files_properties(src/server/http_server.cpp PROPERTIES
    COMPILE_OPTIONS -O0 SKIP_UNITY_BUILD_INCLUSION ON SKIP_PRECOMPILE_HEADERS ON)
  # The sanitizers' default options and suppressions, in every program.
  add_library(codefy_sanitizer_options OBJECT tests/sanitizers/default_options.cpp)
  target_compile_definitions(codefy_sanitizer_options PRIVATE
    CODEFY_SANITIZER_DIR="${CMAKE_CURRENT_SOURCE_DIR}/tests/sanitizers")
endif()

# codefy_sanitized_program(target): an executable of a sanitizer build gets
# the sanitizers' default options and suppressions (tests/sanitizers/).
function(codefy_sanitized_program target)
  if(TARGET codefy_sanitizer_options)
    target_link_libraries(${target} PRIVATE codefy_sanitizer_options)
  endif()
endfunction()
