# Warnings are errors for our own code; third-party headers come in as SYSTEM.
function(codefy_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
endfunction()
