// `tgrun generate`: continues prompts of token ids with a program's logits
// function and trained weights.
#ifndef TG_TOOLS_TGRUN_GENERATE_H
#define TG_TOOLS_TGRUN_GENERATE_H

#include <cstdint>
#include <vector>

namespace tg::tgrun {

/// Runs `tgrun generate ARGS...` (argv[0] is "generate"); `embedded` is
/// the artifact carried by this executable, if any. Returns the exit code.
int generate(int argc, char **argv, const std::vector<uint8_t> &embedded,
             const char *programName);

} // namespace tg::tgrun

#endif
