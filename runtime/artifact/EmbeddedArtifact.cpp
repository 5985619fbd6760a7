// The executable trailer. Reads and writes go through stdio on whole files:
// tgrun binaries are a few megabytes.
#include "tg/runtime/EmbeddedArtifact.h"
#include "tg/runtime/RegularFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <sys/stat.h>
#include <unistd.h>

namespace tg::runtime {
namespace {

constexpr char kMagic[8] = {'T', 'G', 'X', 'E', 'M', 'B', 'E', 'D'};
constexpr std::size_t kTrailerSize = 8 + sizeof(kMagic);

struct FileCloser {
  void operator()(std::FILE *f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

/// Reads a regular file (a FIFO or device would block or never end); on
/// failure sets `problem`.
bool readWholeFile(const std::string &path, std::vector<uint8_t> &out, std::string &problem) {
  struct stat st;
  int fd = openRegularFile(path, st, problem);
  if (fd < 0)
    return false;
  FilePtr f(::fdopen(fd, "rb"));
  if (!f)
    ::close(fd);
  long size = -1;
  if (f && std::fseek(f.get(), 0, SEEK_END) == 0)
    size = std::ftell(f.get());
  if (size < 0 || std::fseek(f.get(), 0, SEEK_SET) != 0) {
    problem = std::strerror(errno);
    return false;
  }
  out.resize(static_cast<std::size_t>(size));
  if (std::fread(out.data(), 1, out.size(), f.get()) != out.size()) {
    problem = std::ferror(f.get()) ? std::strerror(errno) : "the file shrank while being read";
    return false;
  }
  return true;
}

/// The artifact's [begin, end) in an executable image, if it has a trailer.
bool locate(const std::vector<uint8_t> &image, std::size_t &begin, std::size_t &end) {
  if (image.size() < kTrailerSize ||
      std::memcmp(image.data() + image.size() - sizeof(kMagic), kMagic, sizeof(kMagic)) != 0)
    return false;
  uint64_t size = 0;
  const uint8_t *sizeBytes = image.data() + image.size() - kTrailerSize;
  for (int i = 7; i >= 0; --i)
    size = size << 8 | sizeBytes[i];
  if (size > image.size() - kTrailerSize)
    return false;
  end = image.size() - kTrailerSize;
  begin = end - size;
  return true;
}

} // namespace

bool findEmbeddedArtifact(const std::string &exePath, std::vector<uint8_t> &out) {
  // Only the tail is needed, but reading the whole (small) executable keeps
  // this to one code path with appendEmbeddedArtifact.
  std::vector<uint8_t> image;
  std::size_t begin, end;
  std::string problem;
  if (!readWholeFile(exePath, image, problem) || !locate(image, begin, end))
    return false;
  out.assign(image.begin() + begin, image.begin() + end);
  return true;
}

bool appendEmbeddedArtifact(const std::string &exeIn,
                            const std::vector<uint8_t> &artifact,
                            const std::string &exeOut, std::string &error) {
  std::vector<uint8_t> image;
  std::string problem;
  if (!readWholeFile(exeIn, image, problem)) {
    error = exeIn + ": cannot read the runtime executable: " + problem;
    return false;
  }
  std::size_t begin, end;
  if (locate(image, begin, end)) // re-embedding into an --emit=exe output
    image.resize(begin);
  uint64_t size = artifact.size();
  image.insert(image.end(), artifact.begin(), artifact.end());
  for (int i = 0; i < 8; ++i)
    image.push_back(static_cast<uint8_t>(size >> (8 * i)));
  image.insert(image.end(), kMagic, kMagic + sizeof(kMagic));

  std::string temp = exeOut + ".tmp." + std::to_string(::getpid());
  FilePtr f(std::fopen(temp.c_str(), "wb"));
  bool ok = f && std::fwrite(image.data(), 1, image.size(), f.get()) == image.size() &&
            std::fflush(f.get()) == 0 && ::fsync(fileno(f.get())) == 0;
  if (!ok)
    error = temp + ": cannot write the executable: " + std::strerror(errno);
  if (f && std::fclose(f.release()) != 0 && ok) {
    ok = false;
    error = temp + ": cannot write the executable: " + std::strerror(errno);
  }
  if (ok && ::chmod(temp.c_str(), 0755) != 0) {
    ok = false;
    error = temp + ": cannot make the executable runnable: " + std::strerror(errno);
  }
  if (ok && std::rename(temp.c_str(), exeOut.c_str()) != 0) {
    ok = false;
    error = exeOut + ": cannot rename the executable into place: " + std::strerror(errno);
  }
  if (!ok)
    std::remove(temp.c_str());
  return ok;
}

} // namespace tg::runtime
