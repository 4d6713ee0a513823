# Writes OUT, a C++ source holding every Markdown file of DOCS_DIR as the
# product documentation the node ships (actors/tools/docs.hpp): one entry per
# file, its id the file name without ".md". Run at build time whenever a
# document changes.
file(GLOB docs RELATIVE ${DOCS_DIR} ${DOCS_DIR}/*.md)
list(SORT docs)
set(body "// Generated from docs/*.md by cmake/embed_docs.cmake; do not edit.\n")
string(APPEND body "#include \"actors/tools/docs.hpp\"\n\nnamespace voxos::docs {\n\n")
string(APPEND body "const std::vector<shipped_doc>& shipped() {\n  static const std::vector<shipped_doc> all{\n")
foreach(doc IN LISTS docs)
  string(REGEX REPLACE "\\.md$" "" id ${doc})
  string(TOLOWER ${id} id)
  file(READ ${DOCS_DIR}/${doc} text)
  string(FIND "${text}" ")voxosdoc\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${doc} holds the embedding's delimiter")
  endif()
  string(APPEND body "    {\"${id}\", R\"voxosdoc(${text})voxosdoc\"},\n")
endforeach()
string(APPEND body "  };\n  return all;\n}\n\n} // namespace voxos::docs\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
