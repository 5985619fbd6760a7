// Opening input files without blocking: open() on a FIFO waits for a writer
// and a device may never answer, so every file the runtime reads (artifacts,
// safetensors, checkpoints, token files) goes through openRegularFile, which
// reads only regular files (symbolic links to them included).
#ifndef TG_RUNTIME_REGULARFILE_H
#define TG_RUNTIME_REGULARFILE_H

#include <cerrno>
#include <cstring>
#include <string>

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

} // namespace tg::runtime

#endif
