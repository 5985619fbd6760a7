// What tgrun's commands (training, generation) share: exit codes, error
// reporting, number parsing and session ownership.
#ifndef TG_TOOLS_TGRUN_CLI_H
#define TG_TOOLS_TGRUN_CLI_H

#include "tg/runtime/tg_runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tg::tgrun {

constexpr int kError = 1;
constexpr int kUsage = 2;

/// "rank 2: " in a multi-rank run, where every rank reports its own errors.
extern std::string rankPrefix;

/// Prints "tgrun: error: MESSAGE; see --help" and returns kUsage.
int usageError(const std::string &message);
/// Prints "tgrun: error: [rank N: ]MESSAGE" and returns kError.
int error(const std::string &message);
/// Prints and frees a failed status; true when `status` is a success.
bool check(tg_status status, int &exitCode);

/// A decimal integer >= `min`.
bool parseInteger(const std::string &text, int64_t min, int64_t &out);
bool parseUnsigned(const std::string &text, uint64_t &out);

/// Reads and verifies the artifact at `path`, or `bytes` when they are
/// given (the one embedded in this executable), for checks made before a
/// session loads it; `source` names it in messages. Returns 0, or the exit
/// code of an error it printed.
int readVerifiedArtifact(const std::string &path, std::vector<uint8_t> &bytes,
                         std::string &source);

struct SessionCloser {
  void operator()(tg_session *s) const { tg_session_destroy(s); }
};

} // namespace tg::tgrun

#endif
