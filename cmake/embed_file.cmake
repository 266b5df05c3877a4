# Writes OUTPUT, a C++ source defining `const char SYMBOL[]` (in namespace
# NAMESPACE) with the bytes of INPUT and a terminating NUL. Run by the build
# (cmake -P) whenever INPUT changes.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
# 16 bytes a line keeps the generated file readable in a debugger.
string(REGEX REPLACE "(('[^']+',){16})" "\\1\n  " bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_file.cmake: do not edit.\n"
  "namespace ${NAMESPACE} {\n"
  "extern const char ${SYMBOL}[];\n"
  "const char ${SYMBOL}[] = {\n  ${bytes}'\\0'};\n"
  "}  // namespace ${NAMESPACE}\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
