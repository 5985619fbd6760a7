// Fuzz target: the safetensors reader (runtime/formats). The input is a
// whole file image. An accepted file must convert to doubles, serialise,
// and parse back to the same tensors and metadata.
#include "FuzzSupport.h"

#include "tg/runtime/Safetensors.h"

using namespace tg::safetensors;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  File file;
  std::string error;
  if (!parse(bytes.data(), bytes.size(), "fuzz.safetensors", file, error)) {
    if (error.empty())
      tg::fuzz::invariantFailed("a rejected file without a message");
    return 0;
  }
  for (const Tensor &t : file.tensors) {
    if (t.numElements() < 0 ||
        static_cast<uint64_t>(t.numElements()) * dtypeSize(t.dtype) != t.data.size())
      tg::fuzz::invariantFailed("an accepted tensor whose data does not match its shape");
    if (toDoubles(t).size() != static_cast<std::size_t>(t.numElements()))
      tg::fuzz::invariantFailed("toDoubles gives the wrong number of elements");
  }
  std::vector<uint8_t> written;
  if (!serialize(file, written, error))
    return 0; // e.g. an empty tensor name the writer refuses
  File again;
  if (!parse(written.data(), written.size(), "fuzz.safetensors", again, error))
    tg::fuzz::invariantFailed("a serialised file does not parse again");
  if (again.metadata != file.metadata || again.tensors.size() != file.tensors.size())
    tg::fuzz::invariantFailed("a serialised file parses to other tensors or metadata");
  for (const Tensor &t : file.tensors) {
    const Tensor *u = again.find(t.name);
    if (!u || u->dtype != t.dtype || u->shape != t.shape || u->data != t.data)
      tg::fuzz::invariantFailed("a tensor changes in a serialise/parse round trip");
  }
  return 0;
}
