// Megatron-LM's indexed dataset (megatron/core/datasets/indexed_dataset.py,
// the format its tools/preprocess_data.py writes, and MLPerf's GPT-3 C4
// data uses): PREFIX.bin holds the token ids of every sequence, one after
// another, and PREFIX.idx describes them:
//   "MMIDIDX\0\0"            9 bytes
//   version                  u64, 1
//   dtype code               u8: 8 uint16, 4 int32 (the token types Megatron
//                            writes; the others hold no token ids)
//   sequence count S         u64
//   document count D         u64 (entries of the document index)
//   sizes                    i32[S], tokens per sequence
//   pointers                 i64[S], byte offset of each sequence in .bin
//   document index           i64[D], 0 then the end (in sequences) of each
//                            document
//   sequence modes           i8[S], only in multimodal datasets
// all little-endian. TGC reads the sequences in order, so it needs them
// stored contiguously, as Megatron's builder writes them.
#ifndef TG_RUNTIME_MEGATRONINDEX_H
#define TG_RUNTIME_MEGATRONINDEX_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace tg::runtime {

struct MegatronIndex {
  int tokenBytes = 2;        // 2 (uint16) or 4 (int32)
  bool signedTokens = false; // int32 tokens: a negative one is an error
  uint64_t sequences = 0, documents = 0;
  uint64_t tokens = 0; // in all sequences: .bin holds tokens x tokenBytes bytes
};

/// Checks an index (`size` bytes): the header, a token dtype, its length
/// for the counts, sizes >= 0, sequences stored one after another from
/// offset 0, and a document index that rises from 0 to the sequence count.
/// Fails with a message that starts with `sourceName` and names the field.
bool parseMegatronIndex(const uint8_t *data, std::size_t size, const std::string &sourceName,
                        MegatronIndex &out, std::string &error);

} // namespace tg::runtime

#endif
