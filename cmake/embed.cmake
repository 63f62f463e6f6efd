# Embeds data files (the preset definitions) into a generated .cpp so the
# binary needs no files beside it. Each file becomes one entry of
# codefy::embedded_files(): {file name, contents}.
function(codefy_embed_files out_var)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/embedded_files.cpp)
  set(body "#include <string>\n#include <utility>\n#include <vector>\nnamespace codefy {\nconst std::vector<std::pair<std::string, std::string>>& embedded_files() {\n  static const std::vector<std::pair<std::string, std::string>> files = {\n")
  foreach(f ${ARGN})
    file(READ ${f} content)
    get_filename_component(name ${f} NAME)
    set(body "${body}    {\"${name}\", R\"codefy_embed(${content})codefy_embed\"},\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${f})
  endforeach()
  set(body "${body}  };\n  return files;\n}\n}  // namespace codefy\n")
  file(GENERATE OUTPUT ${out} CONTENT "${body}")
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()
