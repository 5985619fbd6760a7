# cmake -DPTX=in.ptx -DOUT=out.cpp -DSYMBOL=name -P EmbedPtx.cmake: the PTX
# as a NUL-terminated char array tg::runtime::cuda::<SYMBOL>, for
# cuModuleLoadDataEx. Raw string pieces of at most 60,000 characters, under
# what compilers promise for one literal (PTX has no ')ptx"').
file(READ "${PTX}" text)
string(LENGTH "${text}" length)
set(body "")
set(start 0)
while(start LESS length)
  string(SUBSTRING "${text}" ${start} 60000 piece)
  string(APPEND body "R\"ptx(${piece})ptx\"\n")
  math(EXPR start "${start} + 60000")
endwhile()
file(WRITE "${OUT}" "// Generated from ${PTX} by EmbedPtx.cmake.\n"
                    "namespace tg::runtime::cuda {\n"
                    "extern const char ${SYMBOL}[];\n"
                    "const char ${SYMBOL}[] =\n${body};\n}\n")
