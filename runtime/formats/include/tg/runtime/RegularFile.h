// Opening input files without blocking: open() on a FIFO waits for a writer
// and a device may never answer, so every file the runtime reads (artifacts,
// safetensors, checkpoints, token files) goes through openRegularFile, which
// reads only regular files (symbolic links to them included), and whole
// files through readRegularFile.
#ifndef TG_RUNTIME_REGULARFILE_H
#define TG_RUNTIME_REGULARFILE_H

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tg::runtime {

/// "a FIFO", "a directory", ... for a file type that is not a regular file.
inline const char *fileKind(mode_t mode) {
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

/// Opens `path` read-only if it is a regular file and returns the
/// descriptor (with `st` filled in); otherwise returns -1 and sets `problem`
/// to the reason ("No such file or directory", "a FIFO, not a regular
/// file"). stat() comes first, so a FIFO or device is never opened; the
/// open is non-blocking and checked again with fstat() in case the path was
/// replaced in between.
inline int openRegularFile(const std::string &path, struct stat &st, std::string &problem) {
  auto notRegular = [&](mode_t mode) {
    problem = fileKind(mode);
    if (problem != "not a regular file")
      problem += ", not a regular file";
    return -1;
  };
  if (::stat(path.c_str(), &st) != 0) {
    problem = std::strerror(errno);
    return -1;
  }
  if (!S_ISREG(st.st_mode))
    return notRegular(st.st_mode);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    problem = std::strerror(errno);
    return -1;
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int savedErrno = errno;
    ::close(fd);
    if (!S_ISREG(st.st_mode))
      return notRegular(st.st_mode);
    problem = std::strerror(savedErrno);
    return -1;
  }
  return fd;
}

/// Reads all of `path`, opened with openRegularFile, into `out`. Fails on a
/// file over `maxBytes`. On failure returns false, sets `problem` to the
/// reason, and `opened` to whether the file could be opened (so a caller
/// can tell "cannot open" from "cannot read").
inline bool readRegularFile(const std::string &path, std::vector<uint8_t> &out,
                            std::string &problem, bool &opened,
                            uint64_t maxBytes = UINT64_MAX) {
  struct stat st;
  int fd = openRegularFile(path, st, problem);
  opened = fd >= 0;
  if (!opened)
    return false;
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    ::close(fd);
    problem = "larger than " + std::to_string(maxBytes) + " bytes";
    return false;
  }
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      problem = n < 0 ? std::strerror(errno) : "the file shrank while being read";
      ::close(fd);
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return true;
}

} // namespace tg::runtime

#endif
