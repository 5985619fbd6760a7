// Safetensors files: reading (fully validated), atomic writing, and the
// element conversions to and from double that the evaluator and the runtime
// share. Plain C++17, no LLVM, no exceptions escape.
//
// Format: an 8-byte little-endian u64 N, then N bytes of JSON
//   {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]},
//    "__metadata__": {"key": "value"}}
// then the data region; offsets are relative to the start of the data region.
#ifndef TG_RUNTIME_SAFETENSORS_H
#define TG_RUNTIME_SAFETENSORS_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tg::safetensors {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, U16, BOOL };

/// The safetensors spelling: "F32", "BF16", ...
const char *dtypeName(DType dtype);
/// Parses a safetensors spelling; nullopt when unknown.
std::optional<DType> parseDType(std::string_view name);
/// Bytes per element.
std::size_t dtypeSize(DType dtype);
bool isFloat(DType dtype);

/// One tensor: raw little-endian bytes, row-major.
struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t numElements() const;
};

/// The contents of a file, tensors in the order of their data offsets.
struct File {
  std::vector<Tensor> tensors;
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`, or nullptr.
  const Tensor *find(std::string_view name) const;
};

/// Parses a whole file image. On failure returns false and sets `error` to a
/// message that starts with `sourceName` and names the offending tensor or
/// field.
bool parse(const uint8_t *bytes, std::size_t size, const std::string &sourceName,
           File &out, std::string &error);
/// Reads and parses `path`.
bool readFile(const std::string &path, File &out, std::string &error);
/// Serialises `file` (tensor data must match shape * dtype size, names must
/// be unique and non-empty).
bool serialize(const File &file, std::vector<uint8_t> &out, std::string &error);
/// Writes `file` to `path` atomically: a temporary file in the same directory,
/// fsynced, renamed over `path`, then the directory fsynced.
bool writeFile(const std::string &path, const File &file, std::string &error);
/// Writes `bytes` to `path` that way.
bool writeFileAtomically(const std::string &path, const std::vector<uint8_t> &bytes,
                         std::string &error);
/// Makes a rename to `path` durable: the directory entry is on disk only
/// once `path`'s directory is fsynced (done here, best effort).
void syncParentDirectory(const std::string &path);

/// Hugging Face's sharded weights: `STEM.safetensors.index.json`
/// ({"metadata": {"total_size": BYTES}, "weight_map": {TENSOR: FILE}}) beside
/// the files `STEM-0000K-of-0000N.safetensors` it names.
///
/// The weight map of an index's text, in the index's order; fails, naming
/// `sourceName`, unless it is a JSON object whose "weight_map" maps each
/// tensor to a file name without a directory.
bool parseIndex(const std::string &text, const std::string &sourceName,
                std::vector<std::pair<std::string, std::string>> &weightMap,
                std::string &error);
/// Reads weights from `path`: a .safetensors file, an index (every file it
/// names, each tensor from the file the map gives), or a model directory
/// holding model.safetensors or model.safetensors.index.json.
bool readWeights(const std::string &path, File &out, std::string &error);
/// Writes `file` to `path` (STEM.safetensors) when its tensor data takes at
/// most `maxShardBytes`, else as shards of at most that much each (a larger
/// tensor alone in its shard), tensors in order, and the index, written
/// last. `written` gets the paths of the files written.
bool writeWeights(const std::string &path, const File &file, uint64_t maxShardBytes,
                  std::vector<std::string> &written, std::string &error);

/// Element conversions. Narrowing float conversions round to nearest, ties to
/// even, overflowing to infinity; integer conversions round to nearest and
/// saturate (NaN becomes 0).
double bf16ToDouble(uint16_t bits);
double f16ToDouble(uint16_t bits);
uint16_t doubleToBf16(double value);
uint16_t doubleToF16(double value);
/// `value` rounded to the nearest value representable in `dtype`.
double roundTo(DType dtype, double value);

/// All elements of `tensor` as doubles.
std::vector<double> toDoubles(const Tensor &tensor);
/// A tensor of `dtype` holding `values` (converted as above). `values` must
/// have as many elements as `shape`.
Tensor fromDoubles(std::string name, DType dtype, std::vector<int64_t> shape,
                   const std::vector<double> &values);

/// "[2, 3]" for messages.
std::string shapeToString(const std::vector<int64_t> &shape);

} // namespace tg::safetensors

#endif
