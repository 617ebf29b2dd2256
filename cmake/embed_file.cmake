# cmake -DINPUT=file -DOUTPUT=file.cpp -DSYMBOL=name -P embed_file.cmake
# Writes a C++ source defining `const std::vector<uint8_t>& SYMBOL()` with INPUT's bytes.
file(READ ${INPUT} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUTPUT} "// Generated from ${INPUT} by cmake/embed_file.cmake; do not edit.\n"
  "#include <cstdint>\n#include <vector>\nnamespace ipu::sim {\n"
  "const std::vector<uint8_t>& ${SYMBOL}() {\n  static const std::vector<uint8_t> bytes = {\n${bytes}};\n"
  "  return bytes;\n}\n}  // namespace ipu::sim\n")
