// Artifacts carried by a standalone executable (`tgc --emit=exe`): a copy of
// tgrun with the artifact appended behind a trailer,
//   [executable][artifact bytes][u64 little-endian artifact size]["TGXEMBED"]
// which the ELF loader ignores and tgrun looks for at start-up.
#ifndef TG_RUNTIME_EMBEDDEDARTIFACT_H
#define TG_RUNTIME_EMBEDDEDARTIFACT_H

#include <cstdint>
#include <string>
#include <vector>

namespace tg::runtime {

/// Reads the artifact embedded in `exePath` into `out`. Returns false when
/// the file has no (intact) trailer or cannot be read.
bool findEmbeddedArtifact(const std::string &exePath, std::vector<uint8_t> &out);

/// Writes `exeOut` = `exeIn` (without any artifact it already carries) +
/// `artifact` + trailer, atomically and executable. On failure returns false
/// and sets `error` to a message naming the file.
bool appendEmbeddedArtifact(const std::string &exeIn,
                            const std::vector<uint8_t> &artifact,
                            const std::string &exeOut, std::string &error);

} // namespace tg::runtime

#endif
