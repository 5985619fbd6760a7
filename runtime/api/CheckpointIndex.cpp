// checkpoint.index.json (tg/runtime/CheckpointIndex.h):
//   {"format": "tgc-checkpoint-index", "version": 1, "step": 10,
//    "data_position": 640, "program": "<16 hex>", "mesh": "dp=2,tp=2",
//    "files": {"rank-00000.safetensors": "<its tg.checksum>", ...},
//    "tensors": {"NAME": {"dtype": "F32", "shape": [...], "pieces": [
//        {"file": "rank-00001.safetensors",
//         "split": {"dim": 0, "padded_size": 64, "blocks": 1, "parts": 2, "index": 1},
//         "chunk": {"size": 96, "parts": 2, "index": 0}}, ...]}, ...},
//    "checksum": "<16 hex>"}
// "split" and "chunk" are present only for pieces that are one; the checksum
// is FNV-1a 64 over the compact text of everything else (keys sorted).
#include "tg/runtime/CheckpointIndex.h"
#include "tg/runtime/Hash.h"
#include "tg/runtime/JsonNesting.h"
#include "tg/runtime/ParameterShard.h"

#include <nlohmann/json.hpp>

#include <set>
#include <utility>

namespace tg::runtime {
namespace {

using Json = nlohmann::json;

constexpr const char *kFormat = "tgc-checkpoint-index";
constexpr int64_t kVersion = 1;
/// The deepest nesting of a valid index: root, tensors, entry, pieces,
/// piece, split.
constexpr int kMaxDepth = 6;
/// Bounds that keep every size computed from the index far from overflow.
constexpr int64_t kMaxDimension = int64_t(1) << 40;
constexpr int64_t kMaxElements = int64_t(1) << 50;
constexpr int64_t kMaxParts = int64_t(1) << 20;

std::string checksumOf(const Json &index) {
  Json rest = index;
  rest.erase("checksum");
  Fnv1a64 hash;
  hash.update(std::string_view(rest.dump()));
  return hexDigits(hash.value());
}

/// A file name beside the index: no directory, not "." or "..".
bool isPlainFileName(const std::string &name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

/// Reads the index's fields, naming the first bad one in `error`.
class Reader {
public:
  Reader(const std::string &source, std::string &error) : source(source), error(error) {}

  bool fail(const std::string &field, const std::string &problem) {
    error = source + ": " + field + " " + problem +
            "; the checkpoint index is corrupt, use another checkpoint";
    return false;
  }

  bool integer(const Json &object, const char *key, const std::string &field, int64_t min,
               int64_t max, int64_t &out) {
    auto it = object.find(key);
    if (it == object.end())
      return fail(field + "." + key, "is missing");
    if (!it->is_number_integer() ||
        (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(max)) ||
        it->get<int64_t>() < min || it->get<int64_t>() > max)
      return fail(field + "." + key, "must be an integer in [" + std::to_string(min) + ", " +
                                         std::to_string(max) + "]");
    out = it->get<int64_t>();
    return true;
  }

  bool string(const Json &object, const char *key, const std::string &field, std::string &out) {
    auto it = object.find(key);
    if (it == object.end() || !it->is_string())
      return fail(field + "." + key, "must be a string");
    out = it->get<std::string>();
    return true;
  }

  const Json *member(const Json &object, const char *key, const std::string &field,
                     bool array) {
    auto it = object.find(key);
    if (it == object.end() || (array ? !it->is_array() : !it->is_object())) {
      fail(field + "." + key, array ? "must be an array" : "must be an object");
      return nullptr;
    }
    return &*it;
  }

  bool split(const Json &json, const std::string &field, const std::vector<int64_t> &shape,
             CheckpointSplit &out) {
    int64_t dim;
    if (!integer(json, "dim", field, 0, int64_t(shape.size()) - 1, dim) ||
        !integer(json, "blocks", field, 1, kMaxParts, out.blocks) ||
        !integer(json, "parts", field, 1, kMaxParts, out.parts) ||
        !integer(json, "index", field, 0, out.parts - 1, out.index))
      return false;
    // Each block is padded to a multiple of the parts, by fewer rows than
    // that: no index can make a reader allocate much more than the tensor.
    int64_t rows = shape[std::size_t(dim)];
    if (!integer(json, "padded_size", field, rows, rows + out.blocks * out.parts - 1,
                 out.paddedSize))
      return false;
    out.dim = uint32_t(dim);
    if (out.paddedSize % out.blocks || (out.paddedSize / out.blocks) % out.parts)
      return fail(field + ".padded_size", "is " + std::to_string(out.paddedSize) +
                                              ", not a multiple of blocks x parts");
    return true;
  }

  bool chunk(const Json &json, const std::string &field, CheckpointChunk &out) {
    return integer(json, "size", field, 1, kMaxElements, out.size) &&
           integer(json, "parts", field, 1, kMaxParts, out.parts) &&
           integer(json, "index", field, 0, out.parts - 1, out.index);
  }

  bool entry(const std::string &name, const Json &json, const std::set<std::string> &files,
             CheckpointEntry &out) {
    std::string field = "tensors[\"" + name + "\"]";
    if (!json.is_object())
      return fail(field, "must be an object");
    out.name = name;
    std::string dtype;
    if (!string(json, "dtype", field, dtype))
      return false;
    std::optional<safetensors::DType> parsed = safetensors::parseDType(dtype);
    if (!parsed)
      return fail(field + ".dtype", "'" + dtype.substr(0, 16) + "' is not a safetensors dtype");
    out.dtype = *parsed;
    const Json *shape = member(json, "shape", field, /*array=*/true);
    if (!shape)
      return false;
    int64_t elements = 1;
    for (const Json &d : *shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > kMaxDimension ||
          __builtin_mul_overflow(elements, d.get<int64_t>(), &elements) ||
          elements > kMaxElements || out.shape.size() == 8)
        return fail(field + ".shape", "must list at most 8 dimensions in [1, 2^40], at most "
                                      "2^50 elements in all");
      out.shape.push_back(d.get<int64_t>());
    }
    const Json *pieces = member(json, "pieces", field, /*array=*/true);
    if (!pieces)
      return false;
    for (std::size_t i = 0; i < pieces->size(); ++i) {
      const Json &p = (*pieces)[i];
      std::string at = field + ".pieces[" + std::to_string(i) + "]";
      if (!p.is_object())
        return fail(at, "must be an object");
      CheckpointPiece piece;
      if (!string(p, "file", at, piece.file))
        return false;
      if (!files.count(piece.file))
        return fail(at + ".file", "'" + piece.file.substr(0, 64) + "' is not listed in files");
      if (auto it = p.find("split"); it != p.end()) {
        if (!it->is_object())
          return fail(at + ".split", "must be an object");
        if (!split(*it, at + ".split", out.shape, piece.split.emplace()))
          return false;
      }
      if (auto it = p.find("chunk"); it != p.end()) {
        if (!it->is_object())
          return fail(at + ".chunk", "must be an object");
        if (!chunk(*it, at + ".chunk", piece.chunk.emplace()))
          return false;
      }
      out.pieces.push_back(std::move(piece));
    }
    return covers(out, field);
  }

  /// The pieces share one split and one chunking (but for their indices),
  /// each part of which they hold once, and a chunking holds its whole part.
  bool covers(const CheckpointEntry &entry, const std::string &field) {
    if (entry.pieces.empty())
      return fail(field + ".pieces", "is empty");
    const CheckpointPiece &first = entry.pieces.front();
    auto sameSplit = [&](const CheckpointPiece &p) {
      if (p.split.has_value() != first.split.has_value())
        return false;
      if (!p.split)
        return true;
      const CheckpointSplit &a = *p.split, &b = *first.split;
      return a.dim == b.dim && a.paddedSize == b.paddedSize && a.blocks == b.blocks &&
             a.parts == b.parts;
    };
    auto sameChunk = [&](const CheckpointPiece &p) {
      return p.chunk.has_value() == first.chunk.has_value() &&
             (!p.chunk || (p.chunk->size == first.chunk->size &&
                           p.chunk->parts == first.chunk->parts));
    };
    int64_t splitParts = first.split ? first.split->parts : 1;
    int64_t chunkParts = first.chunk ? first.chunk->parts : 1;
    std::set<std::pair<int64_t, int64_t>> held;
    for (std::size_t i = 0; i < entry.pieces.size(); ++i) {
      const CheckpointPiece &p = entry.pieces[i];
      std::string at = field + ".pieces[" + std::to_string(i) + "]";
      if (!sameSplit(p) || !sameChunk(p))
        return fail(at, "is split or chunked unlike pieces[0]");
      if (!held.insert({p.split ? p.split->index : 0, p.chunk ? p.chunk->index : 0}).second)
        return fail(at, "holds the same part as an earlier piece");
    }
    if (int64_t(held.size()) != splitParts * chunkParts)
      return fail(field + ".pieces", "hold " + std::to_string(held.size()) + " of the " +
                                         std::to_string(splitParts * chunkParts) +
                                         " parts of the tensor");
    if (first.chunk) {
      // ZeRO-1's chunks: ceil(part / parts) elements each.
      CheckpointPiece whole = first;
      whole.chunk.reset();
      int64_t part = pieceElements(entry, whole), parts = first.chunk->parts;
      if (first.chunk->size != (part + parts - 1) / parts)
        return fail(field + ".pieces[0].chunk",
                    "holds " + std::to_string(parts) + " chunks of " +
                        std::to_string(first.chunk->size) + ", not of ceil(" +
                        std::to_string(part) + " / " + std::to_string(parts) +
                        "), the part's elements over the chunks");
    }
    return true;
  }

private:
  const std::string &source;
  std::string &error;
};

} // namespace

int64_t pieceElements(const CheckpointEntry &entry, const CheckpointPiece &piece) {
  if (piece.chunk)
    return piece.chunk->size;
  if (!piece.split)
    return ShardLayout(entry.shape).localElements();
  const CheckpointSplit &split = *piece.split;
  return ShardLayout(entry.shape, split.dim, split.paddedSize, split.blocks, split.parts,
                     split.index)
      .localElements();
}

std::string formatCheckpointIndex(const CheckpointIndex &index) {
  Json json = {{"format", kFormat},
               {"version", kVersion},
               {"step", index.step},
               {"data_position", index.dataPosition},
               {"program", index.program},
               {"mesh", index.mesh},
               {"files", index.files}};
  Json &tensors = json["tensors"] = Json::object();
  for (const CheckpointEntry &entry : index.tensors) {
    Json pieces = Json::array();
    for (const CheckpointPiece &p : entry.pieces) {
      Json piece = {{"file", p.file}};
      if (p.split)
        piece["split"] = {{"dim", p.split->dim},
                          {"padded_size", p.split->paddedSize},
                          {"blocks", p.split->blocks},
                          {"parts", p.split->parts},
                          {"index", p.split->index}};
      if (p.chunk)
        piece["chunk"] = {
            {"size", p.chunk->size}, {"parts", p.chunk->parts}, {"index", p.chunk->index}};
      pieces.push_back(std::move(piece));
    }
    tensors[entry.name] = {{"dtype", safetensors::dtypeName(entry.dtype)},
                           {"shape", entry.shape},
                           {"pieces", std::move(pieces)}};
  }
  json["checksum"] = checksumOf(json);
  return json.dump(1) + "\n";
}

bool parseCheckpointIndex(const std::string &text, const std::string &sourceName,
                          CheckpointIndex &out, std::string &error) {
  Reader read(sourceName, error);
  if (findTooDeepNesting(text.data(), text.size(), kMaxDepth))
    return read.fail("the text", "nests deeper than a checkpoint index does");
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object())
    return read.fail("the text", "is not a JSON object");
  std::string format, checksum;
  int64_t version;
  if (!read.string(json, "format", "index", format))
    return false;
  if (format != kFormat)
    return read.fail("index.format", "is not \"" + std::string(kFormat) + "\"");
  if (!read.integer(json, "version", "index", kVersion, kVersion, version) ||
      !read.string(json, "checksum", "index", checksum))
    return false;
  if (checksum != checksumOf(json))
    return read.fail("index.checksum", "does not match the index's contents");
  if (!read.integer(json, "step", "index", 0, INT64_MAX, out.step) ||
      !read.integer(json, "data_position", "index", 0, INT64_MAX, out.dataPosition) ||
      !read.string(json, "program", "index", out.program) ||
      !read.string(json, "mesh", "index", out.mesh))
    return false;
  const Json *files = read.member(json, "files", "index", /*array=*/false);
  const Json *tensors = files ? read.member(json, "tensors", "index", /*array=*/false) : nullptr;
  if (!tensors)
    return false;
  std::set<std::string> names;
  for (const auto &[name, sum] : files->items()) {
    if (!isPlainFileName(name))
      return read.fail("index.files", "names '" + name.substr(0, 64) +
                                          "', not a file name beside the index");
    if (!sum.is_string())
      return read.fail("index.files[\"" + name + "\"]", "must be the file's checksum");
    out.files[name] = sum.get<std::string>();
    names.insert(name);
  }
  for (const auto &[name, entry] : tensors->items()) {
    out.tensors.emplace_back();
    if (!read.entry(name, entry, names, out.tensors.back()))
      return false;
  }
  return true;
}

} // namespace tg::runtime
