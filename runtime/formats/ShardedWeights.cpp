// Hugging Face's sharded safetensors weights (model.safetensors.index.json).
#include "tg/runtime/RegularFile.h"
#include "tg/runtime/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cstdio>

#include <sys/stat.h>
#include <unistd.h>

namespace tg::safetensors {
namespace {

constexpr std::string_view kSuffix = ".safetensors", kIndexSuffix = ".safetensors.index.json";
/// An index is a small file; anything larger is not one.
constexpr std::size_t kMaxIndexBytes = 64 << 20;

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string directoryOf(const std::string &path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool readIndex(const std::string &path, File &out, std::string &error) {
  std::vector<uint8_t> bytes;
  std::string problem;
  bool opened;
  if (!runtime::readRegularFile(path, bytes, problem, opened, kMaxIndexBytes)) {
    error = path + ": cannot " + (opened ? "read" : "open") + " the weights index (" + problem +
            "); check the path";
    return false;
  }
  std::string text(bytes.begin(), bytes.end());
  std::vector<std::pair<std::string, std::string>> weightMap;
  if (!parseIndex(text, path, weightMap, error))
    return false;
  // Each shard is read once; a tensor is taken from the file the map names.
  std::map<std::string, File> shards;
  for (const auto &[name, shard] : weightMap) {
    if (!shards.count(shard) &&
        !readFile(directoryOf(path) + shard, shards[shard], error))
      return false;
    const Tensor *t = shards[shard].find(name);
    if (!t) {
      error = path + ": weight_map names '" + shard + "' for tensor '" + name +
              "', which that file does not hold";
      return false;
    }
    out.tensors.push_back(*t);
  }
  return true;
}

} // namespace

bool parseIndex(const std::string &text, const std::string &sourceName,
                std::vector<std::pair<std::string, std::string>> &weightMap,
                std::string &error) {
  nlohmann::json index = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    error = sourceName + ": is not a safetensors index: it needs a \"weight_map\" object "
                         "mapping tensor names to files";
    return false;
  }
  for (const auto &[name, file] : index["weight_map"].items()) {
    if (!file.is_string() || file.get<std::string>().empty() ||
        file.get<std::string>().find('/') != std::string::npos) {
      error = sourceName + ": weight_map[\"" + name +
              "\"] must be a file name beside the index, without a directory";
      return false;
    }
    weightMap.emplace_back(name, file.get<std::string>());
  }
  return true;
}

bool readWeights(const std::string &path, File &out, std::string &error) {
  if (isDirectory(path)) {
    std::string dir = endsWith(path, "/") ? path : path + "/";
    std::string index = dir + "model" + std::string(kIndexSuffix);
    if (::access(index.c_str(), F_OK) == 0)
      return readIndex(index, out, error);
    std::string single = dir + "model" + std::string(kSuffix);
    if (::access(single.c_str(), F_OK) == 0)
      return readFile(single, out, error);
    error = path + ": is a directory without model.safetensors or model" +
            std::string(kIndexSuffix) + "; pass the weights file or its index";
    return false;
  }
  if (endsWith(path, ".index.json"))
    return readIndex(path, out, error);
  return readFile(path, out, error);
}

bool writeWeights(const std::string &path, const File &file, uint64_t maxShardBytes,
                  std::vector<std::string> &written, std::string &error) {
  written.clear();
  uint64_t total = 0;
  for (const Tensor &t : file.tensors)
    total += t.data.size();
  if (total <= maxShardBytes) {
    written.push_back(path);
    return writeFile(path, file, error);
  }
  // Greedy in tensor order, as transformers' save_pretrained does.
  std::vector<File> shards(1);
  uint64_t filled = 0;
  for (const Tensor &t : file.tensors) {
    if (filled > 0 && filled + t.data.size() > maxShardBytes) {
      shards.emplace_back();
      filled = 0;
    }
    shards.back().tensors.push_back(t);
    shards.back().metadata = file.metadata;
    filled += t.data.size();
  }
  std::string stem = endsWith(path, kSuffix) ? path.substr(0, path.size() - kSuffix.size())
                                             : path;
  std::string dir = directoryOf(stem), base = stem.substr(dir.size());
  nlohmann::json weightMap = nlohmann::json::object();
  for (std::size_t k = 0; k < shards.size(); ++k) {
    char name[64];
    std::snprintf(name, sizeof(name), "-%05zu-of-%05zu", k + 1, shards.size());
    std::string shard = base + name + std::string(kSuffix);
    if (!writeFile(dir + shard, shards[k], error))
      return false;
    written.push_back(dir + shard);
    for (const Tensor &t : shards[k].tensors)
      weightMap[t.name] = shard;
  }
  // The index last: a reader that finds it finds every shard it names.
  nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weightMap}};
  std::string text = index.dump(2) + "\n";
  std::string indexPath = stem + std::string(kIndexSuffix);
  if (!writeFileAtomically(indexPath, std::vector<uint8_t>(text.begin(), text.end()), error))
    return false;
  written.push_back(indexPath);
  return true;
}

} // namespace tg::safetensors
