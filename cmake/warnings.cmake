# Warnings are errors for our own code when CODEFY_FATAL_WARNINGS is ON (the
# default, and what CI builds); a packager building with another compiler can
# turn it off and keep the warnings. Third-party headers come in as SYSTEM.
option(CODEFY_FATAL_WARNINGS "Treat compiler warnings in Codefy's own code as errors" ON)

function(codefy_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(CODEFY_FATAL_WARNINGS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
