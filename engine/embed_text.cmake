# Build-time helper: writes a C++ source defining `extern const char SYMBOL[]` holding the text of INPUT,
# so a file shipped in assets/ is also built into the binary. Usage:
#   cmake -DINPUT=file -DOUTPUT=file.cpp -DSYMBOL=name -DNAMESPACE=ns -P embed_text.cmake
file(READ "${INPUT}" text)
set(delimiter "attnscope_embed")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )${delimiter}\"")
endif()
file(WRITE "${OUTPUT}"
  "// Generated from ${INPUT} by engine/embed_text.cmake at build time; do not edit.\n"
  "namespace ${NAMESPACE} {\n"
  "extern const char ${SYMBOL}[];\n"
  "const char ${SYMBOL}[] = R\"${delimiter}(${text})${delimiter}\";\n"
  "}  // namespace ${NAMESPACE}\n")
