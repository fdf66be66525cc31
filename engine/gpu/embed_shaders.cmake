# Writes OUT: a C++ table of the GLSL files in FILES (name -> text), so that the binary needs no shader folder.
# Run at build time by engine/gpu/CMakeLists.txt whenever a shader changes.
set(body "// Generated from shaders/ by engine/gpu/embed_shaders.cmake: do not edit.\n")
string(APPEND body "#include \"shader_library.h\"\n\nnamespace attnscope::gpu {\n\n")
string(APPEND body "const std::vector<EmbeddedShader>& embeddedShaders() {\n  static const std::vector<EmbeddedShader> shaders = {\n")
foreach(file IN LISTS FILES)
  get_filename_component(name ${file} NAME)
  file(READ ${file} text)
  string(APPEND body "    {\"${name}\", R\"attnscope_glsl(${text})attnscope_glsl\"},\n")
endforeach()
string(APPEND body "  };\n  return shaders;\n}\n\n}  // namespace attnscope::gpu\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
