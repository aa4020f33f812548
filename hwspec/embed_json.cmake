# Writes ${OUT}: a C++ source defining sextant::kBuiltinDevicesJson with the contents of ${IN}.
file(READ ${IN} CONTENT)
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\nnamespace sextant {\nextern const char* const kBuiltinDevicesJson;\nconst char* const kBuiltinDevicesJson = R\"sextant_json(${CONTENT})sextant_json\";\n}\n")
