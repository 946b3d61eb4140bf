# Writes the bytes of INPUT to OUTPUT as a C initializer list ("0x7f,0x45,"),
# for a source file to #include into an array: how harp carries the library
# runtime's archive (lib/Runtime/Export.cpp). Run with cmake -P.
file(READ ${INPUT} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# Rewritten only when the bytes change, so that its includer is not rebuilt.
file(WRITE ${OUTPUT}.tmp "${bytes}\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
