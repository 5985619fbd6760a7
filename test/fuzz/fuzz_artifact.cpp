// Fuzz target: the .tgx artifact verifier (runtime/artifact). Each input is
// verified twice: as it is (the identifier, trailer and checksum checks),
// and re-sealed with a correct checksum trailer (for an input that has a
// trailer, in place of it), since almost every mutation breaks the checksum
// and would otherwise never reach the structure checks behind it. Verified
// programs then go through the helpers the runtime uses on them.
#include "FuzzSupport.h"

#include "tg/runtime/Artifact.h"

#include <cstring>
#include <vector>

using namespace tg::runtime;

namespace {

void afterVerification(const uint8_t *bytes) {
  const tg::tgx::Program &program = *tg::tgx::GetProgram(bytes);
  for (const char *name : {"step", "tokens", "targets", "loss", "grad_norm", "lr"})
    if (!findSlot(program, name))
      tg::fuzz::invariantFailed("a verified artifact lacks an interface slot");
  for (const tg::tgx::Slot *slot : *program.slots())
    if (numElements(*slot) < 0 || dtypeSize(slot->dtype()) == 0)
      tg::fuzz::invariantFailed("a verified artifact has a slot of negative size or no dtype");
}

void verify(const std::vector<uint8_t> &bytes) {
  std::string error;
  if (verifyArtifact(bytes.data(), bytes.size(), "fuzz.tgx", error))
    afterVerification(bytes.data());
  else if (error.empty())
    tg::fuzz::invariantFailed("a rejected artifact without a message");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Copies of the exact size: FlatBuffers wants the alignment of a fresh
  // allocation, and AddressSanitizer then sees a read past the end.
  std::vector<uint8_t> bytes(data, data + size);
  verify(bytes);

  std::size_t imageSize = size;
  if (size >= kTrailerSize &&
      std::memcmp(data + size - kTrailerSize, kTrailerMagic, sizeof(kTrailerMagic)) == 0)
    imageSize = size - kTrailerSize;
  std::vector<uint8_t> sealed(data, data + imageSize);
  sealArtifact(sealed);
  if (sealed != bytes)
    verify(sealed);
  return 0;
}
