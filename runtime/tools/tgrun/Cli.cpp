#include "Cli.h"

#include "tg/runtime/Artifact.h"
#include "tg/runtime/RegularFile.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace tg::tgrun {

std::string rankPrefix;

int usageError(const std::string &message) {
  std::fprintf(stderr, "tgrun: error: %s; see --help\n", message.c_str());
  return kUsage;
}

int error(const std::string &message) {
  std::fprintf(stderr, "tgrun: error: %s%s\n", rankPrefix.c_str(), message.c_str());
  return kError;
}

bool check(tg_status status, int &exitCode) {
  if (!status)
    return true;
  exitCode = error(tg_status_message(status));
  tg_status_free(status);
  return false;
}

bool parseInteger(const std::string &text, int64_t min, int64_t &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  out = value;
  return errno == 0 && *end == '\0' && value >= min;
}

bool parseUnsigned(const std::string &text, uint64_t &out) {
  if (text.empty() || text[0] == '-')
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  out = value;
  return errno == 0 && *end == '\0';
}

int readVerifiedArtifact(const std::string &path, std::vector<uint8_t> &bytes,
                         std::string &source) {
  source = path.empty() ? "this executable's program" : path;
  std::string problem;
  bool opened;
  if (bytes.empty() && !runtime::readRegularFile(path, bytes, problem, opened))
    return error(path + ": cannot read the artifact (" + problem + "); check the path");
  if (!runtime::verifyArtifact(bytes.data(), bytes.size(), source, problem))
    return error(problem);
  return 0;
}

} // namespace tg::tgrun
