// Bounding the nesting of a JSON text before it is parsed: recursive parsers
// (llvm::json, nlohmann) overflow the stack on deep enough input, so config
// files and safetensors headers are scanned first, without recursion.
#ifndef TG_RUNTIME_JSONNESTING_H
#define TG_RUNTIME_JSONNESTING_H

#include <cstddef>
#include <optional>

namespace tg::runtime {

/// The offset of the first `[` or `{` (outside strings) that opens a level
/// deeper than `maxDepth`, if any.
inline std::optional<std::size_t> findTooDeepNesting(const char *text,
                                                     std::size_t size,
                                                     int maxDepth) {
  int depth = 0;
  bool inString = false;
  for (std::size_t i = 0; i < size; ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

} // namespace tg::runtime

#endif
