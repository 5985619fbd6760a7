// FNV-1a 64: checksums kernel images in artifacts (KernelModule.
// image_fnv1a64, which tgc computes with this class) and checkpoints, names
// the random stream of each parameter and fingerprints a program's state
// layout. Not cryptographic: it detects corruption and mix-ups, not
// tampering.
#ifndef TG_RUNTIME_HASH_H
#define TG_RUNTIME_HASH_H

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace tg::runtime {

class Fnv1a64 {
public:
  void update(const void *data, std::size_t size) {
    auto *p = static_cast<const uint8_t *>(data);
    for (std::size_t i = 0; i < size; ++i)
      hash = (hash ^ p[i]) * 0x100000001b3ull;
  }
  /// Hashes the string and a terminating NUL, so that consecutive strings
  /// cannot run into each other ("ab" + "c" differs from "a" + "bc").
  void update(std::string_view text) {
    update(text.data(), text.size());
    update("", 1);
  }
  void update(uint64_t value) {
    uint8_t bytes[8];
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<uint8_t>(value >> (8 * i));
    update(bytes, sizeof(bytes));
  }
  uint64_t value() const { return hash; }

private:
  uint64_t hash = 0xcbf29ce484222325ull;
};

/// `value` as 16 lowercase hex digits, as checksums and fingerprints are
/// written.
inline std::string hexDigits(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016" PRIx64, value);
  return text;
}

} // namespace tg::runtime

#endif
