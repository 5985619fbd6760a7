// Shared by the fuzz targets: readers that take a path get the input through
// an anonymous memory file (memfd), opened by path as /proc/self/fd/N. It is
// a regular file to fstat, never touches the disk, and is reused across
// inputs, so a target runs as fast as the reader allows.
#ifndef TG_FUZZ_FUZZSUPPORT_H
#define TG_FUZZ_FUZZSUPPORT_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace tg::fuzz {

class MemFile {
public:
  explicit MemFile(const char *name) {
    fd = ::memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  MemFile(const MemFile &) = delete;
  MemFile &operator=(const MemFile &) = delete;
  ~MemFile() { ::close(fd); }

  /// Replaces the file's contents with `size` bytes from `data`.
  void write(const uint8_t *data, std::size_t size) {
    if (::ftruncate(fd, 0) != 0) {
      std::perror("ftruncate");
      std::abort();
    }
    std::size_t done = 0;
    while (done < size) {
      ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) {
        std::perror("pwrite");
        std::abort();
      }
      done += static_cast<std::size_t>(n);
    }
  }

  const std::string &filePath() const { return path; }

private:
  int fd = -1;
  std::string path;
};

/// Fails the run (libFuzzer reports it as a crash, with the input) when an
/// invariant of a reader does not hold.
[[noreturn]] inline void invariantFailed(const char *what) {
  std::fprintf(stderr, "tg fuzz: invariant violated: %s\n", what);
  std::abort();
}

} // namespace tg::fuzz

#endif
