// Safetensors I/O. Every structural property of a file is checked before any
// byte of the data region is touched, so corrupt input yields a message and
// never undefined behaviour. The JSON header uses nlohmann/json's
// non-throwing entry points only.
#include "tg/runtime/Safetensors.h"
#include "tg/runtime/JsonNesting.h"
#include "tg/runtime/RegularFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tg::safetensors {
namespace {
using json = nlohmann::json;

struct DTypeInfo {
  DType dtype;
  const char *name;
  std::size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
    {DType::I16, "I16", 2}, {DType::I8, "I8", 1},   {DType::U8, "U8", 1},
    {DType::U16, "U16", 2}, {DType::BOOL, "BOOL", 1},
};

const DTypeInfo &info(DType dtype) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == dtype)
      return i;
  return kDTypes[0]; // unreachable: every enumerator is listed
}

/// Rounds a finite or infinite `x` to a binary format with `precision`
/// significand bits (hidden bit included) and exponents in [minExp, maxExp]:
/// round to nearest even, gradual underflow, overflow to infinity.
double roundToFormat(double x, int precision, int minExp, int maxExp) {
  if (!std::isfinite(x) || x == 0)
    return x;
  int exp = std::max(std::ilogb(x), minExp);
  double quantum = std::ldexp(1.0, exp - precision + 1);
  // x / quantum is exact (a power-of-two scaling); nearbyint rounds to even in
  // the default rounding mode.
  double rounded = std::nearbyint(x / quantum) * quantum;
  double maxFinite = std::ldexp(2.0 - std::ldexp(1.0, 1 - precision), maxExp);
  if (std::fabs(rounded) > maxFinite)
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  return rounded;
}

template <typename T> T saturate(double value) {
  if (std::isnan(value))
    return 0;
  double r = std::nearbyint(value);
  if (r <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

template <typename T> T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> void store(uint8_t *p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

double decode(DType dtype, const uint8_t *p) {
  switch (dtype) {
  case DType::F64: return load<double>(p);
  case DType::F32: return load<float>(p);
  case DType::F16: return f16ToDouble(load<uint16_t>(p));
  case DType::BF16: return bf16ToDouble(load<uint16_t>(p));
  case DType::I64: return static_cast<double>(load<int64_t>(p));
  case DType::I32: return load<int32_t>(p);
  case DType::I16: return load<int16_t>(p);
  case DType::I8: return load<int8_t>(p);
  case DType::U8: return load<uint8_t>(p);
  case DType::U16: return load<uint16_t>(p);
  case DType::BOOL: return *p != 0;
  }
  return 0;
}

void encode(DType dtype, double v, uint8_t *p) {
  switch (dtype) {
  case DType::F64: return store<double>(p, v);
  case DType::F32: return store<float>(p, static_cast<float>(v));
  case DType::F16: return store<uint16_t>(p, doubleToF16(v));
  case DType::BF16: return store<uint16_t>(p, doubleToBf16(v));
  case DType::I64: return store<int64_t>(p, saturate<int64_t>(v));
  case DType::I32: return store<int32_t>(p, saturate<int32_t>(v));
  case DType::I16: return store<int16_t>(p, saturate<int16_t>(v));
  case DType::I8: return store<int8_t>(p, saturate<int8_t>(v));
  case DType::U8: return store<uint8_t>(p, saturate<uint8_t>(v));
  case DType::U16: return store<uint16_t>(p, saturate<uint16_t>(v));
  case DType::BOOL: *p = v != 0; return;
  }
}

/// Element count of `shape` times `elementSize`, or nullopt on overflow of
/// the u64 range.
std::optional<uint64_t> byteSize(const std::vector<int64_t> &shape,
                                 std::size_t elementSize) {
  uint64_t bytes = elementSize;
  for (int64_t dim : shape) {
    auto d = static_cast<uint64_t>(dim);
    if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / d)
      return std::nullopt;
    bytes *= d;
  }
  return bytes;
}

/// A JSON value as a u64, when it is a non-negative integer.
std::optional<uint64_t> asUnsigned(const json &value) {
  if (!value.is_number_unsigned())
    return std::nullopt;
  return value.get<uint64_t>();
}

struct Entry {
  Tensor tensor;
  uint64_t begin, end;
};

/// Validates the header entry of one tensor; on failure returns the message
/// (without the file name).
std::optional<std::string> parseEntry(const std::string &name,
                                      const json &value, uint64_t dataSize,
                                      Entry &entry) {
  std::string where = "tensor '" + name + "'";
  if (!value.is_object())
    return where + ": entry is not a JSON object";
  for (const auto &field : value.items())
    if (field.key() != "dtype" && field.key() != "shape" &&
        field.key() != "data_offsets")
      return where + ": unknown field '" + field.key() + "'";

  auto dtypeIt = value.find("dtype");
  if (dtypeIt == value.end() || !dtypeIt->is_string())
    return where + ": field 'dtype' is missing or not a string";
  std::optional<DType> dtype = parseDType(dtypeIt->get<std::string>());
  if (!dtype)
    return where + ": unknown dtype '" + dtypeIt->get<std::string>() + "'";

  auto shapeIt = value.find("shape");
  if (shapeIt == value.end() || !shapeIt->is_array())
    return where + ": field 'shape' is missing or not an array";
  std::vector<int64_t> shape;
  for (const json &dim : *shapeIt) {
    std::optional<uint64_t> d = asUnsigned(dim);
    if (!d || *d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return where + ": field 'shape' has an entry that is not a "
                     "non-negative integer";
    shape.push_back(static_cast<int64_t>(*d));
  }
  std::optional<uint64_t> bytes = byteSize(shape, dtypeSize(*dtype));
  if (!bytes)
    return where + ": shape " + shapeToString(shape) + " is too large";

  auto offsetsIt = value.find("data_offsets");
  if (offsetsIt == value.end() || !offsetsIt->is_array() ||
      offsetsIt->size() != 2)
    return where + ": field 'data_offsets' is missing or not [begin, end]";
  std::optional<uint64_t> begin = asUnsigned((*offsetsIt)[0]);
  std::optional<uint64_t> end = asUnsigned((*offsetsIt)[1]);
  if (!begin || !end)
    return where + ": field 'data_offsets' holds a value that is not a "
                   "non-negative integer";
  if (*begin > *end || *end > dataSize)
    return where + ": data_offsets [" + std::to_string(*begin) + ", " +
           std::to_string(*end) + "] lie outside the data region of " +
           std::to_string(dataSize) + " bytes";
  if (*end - *begin != *bytes)
    return where + ": data_offsets span " + std::to_string(*end - *begin) +
           " bytes, expected " + std::to_string(*bytes) + " for shape " +
           shapeToString(shape) + " of " + dtypeName(*dtype);

  entry.tensor.name = name;
  entry.tensor.dtype = *dtype;
  entry.tensor.shape = std::move(shape);
  entry.begin = *begin;
  entry.end = *end;
  return std::nullopt;
}

/// Rejects a header nesting deeper than a safetensors header does (three
/// levels) before it is parsed.
std::optional<std::string> checkNesting(const uint8_t *text, uint64_t size) {
  constexpr int kMaxDepth = 3;
  if (auto at = tg::runtime::findTooDeepNesting(reinterpret_cast<const char *>(text), size,
                                   kMaxDepth))
    return "header nests deeper than " + std::to_string(kMaxDepth) +
           " levels (at byte " + std::to_string(8 + *at) +
           "), which a safetensors header never does";
  return std::nullopt;
}

std::string systemError(const std::string &what, const std::string &path) {
  return path + ": cannot " + what + ": " + std::strerror(errno);
}
} // namespace

const char *dtypeName(DType dtype) { return info(dtype).name; }

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &i : kDTypes)
    if (name == i.name)
      return i.dtype;
  return std::nullopt;
}

std::size_t dtypeSize(DType dtype) { return info(dtype).size; }

bool isFloat(DType dtype) {
  return dtype == DType::F64 || dtype == DType::F32 || dtype == DType::F16 ||
         dtype == DType::BF16;
}

int64_t Tensor::numElements() const {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    return 0; // also avoids overflowing on the other dims
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

const Tensor *File::find(std::string_view name) const {
  for (const Tensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

double bf16ToDouble(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof(f));
  return f;
}

double f16ToDouble(uint16_t bits) {
  double sign = bits & 0x8000 ? -1.0 : 1.0;
  int exp = (bits >> 10) & 0x1f;
  int mantissa = bits & 0x3ff;
  if (exp == 0x1f)
    return mantissa ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (exp == 0)
    return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exp - 25);
}

uint16_t doubleToBf16(double value) {
  if (std::isnan(value))
    return std::signbit(value) ? 0xffc0 : 0x7fc0;
  // The rounded value is exactly representable in float.
  auto f = static_cast<float>(roundTo(DType::BF16, value));
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t doubleToF16(double value) {
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (std::isnan(value))
    return sign | 0x7e00;
  double a = std::fabs(roundTo(DType::F16, value));
  if (std::isinf(a))
    return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) // subnormal: an exact multiple of 2^-24
    return sign | static_cast<uint16_t>(std::ldexp(a, 24));
  int exp = std::ilogb(a);
  auto mantissa = static_cast<uint16_t>(std::ldexp(a, 10 - exp) - 1024);
  return sign | static_cast<uint16_t>((exp + 15) << 10) | mantissa;
}

double roundTo(DType dtype, double value) {
  switch (dtype) {
  case DType::F64: return value;
  case DType::F32: return static_cast<float>(value);
  case DType::F16: return roundToFormat(value, 11, -14, 15);
  case DType::BF16: return roundToFormat(value, 8, -126, 127);
  default: {
    uint8_t buffer[8];
    encode(dtype, value, buffer);
    return decode(dtype, buffer);
  }
  }
}

std::vector<double> toDoubles(const Tensor &tensor) {
  std::size_t size = dtypeSize(tensor.dtype);
  std::vector<double> values(tensor.data.size() / size);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = decode(tensor.dtype, tensor.data.data() + i * size);
  return values;
}

Tensor fromDoubles(std::string name, DType dtype, std::vector<int64_t> shape,
                   const std::vector<double> &values) {
  Tensor t{std::move(name), dtype, std::move(shape), {}};
  std::size_t size = dtypeSize(dtype);
  t.data.resize(values.size() * size);
  for (std::size_t i = 0; i < values.size(); ++i)
    encode(dtype, values[i], t.data.data() + i * size);
  return t;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

bool parse(const uint8_t *bytes, std::size_t size, const std::string &sourceName,
           File &out, std::string &error) {
  auto fail = [&](const std::string &message) {
    error = sourceName + ": " + message;
    return false;
  };
  if (size < 8)
    return fail("file too short (" + std::to_string(size) +
                " bytes) to hold the 8-byte header size");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = headerSize << 8 | bytes[i];
  if (headerSize > size - 8)
    return fail("header size " + std::to_string(headerSize) +
                " extends beyond the end of the file (" + std::to_string(size) +
                " bytes)");
  const uint8_t *headerBegin = bytes + 8;
  // The expected header nests three deep ({"name": {"shape": [..]}}); a
  // deeper one is not a safetensors header, whatever else it is.
  if (std::optional<std::string> problem = checkNesting(headerBegin, headerSize))
    return fail(*problem);
  // JSON allows duplicate keys and nlohmann/json keeps the last one; a
  // safetensors header must not have any (which tensor would be meant?).
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  json::parser_callback_t findDuplicates = [&](int, json::parse_event_t event,
                                               json &parsed) {
    if (event == json::parse_event_t::object_start)
      keys.emplace_back();
    else if (event == json::parse_event_t::object_end && !keys.empty())
      keys.pop_back();
    else if (event == json::parse_event_t::key && !keys.empty() && parsed.is_string() &&
             !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json header = json::parse(headerBegin, headerBegin + headerSize, findDuplicates,
                            /*allow_exceptions=*/false);
  if (header.is_discarded())
    return fail("header is not valid JSON (is the header size " + std::to_string(headerSize) +
                " right?)");
  if (!header.is_object())
    return fail("header is not a JSON object");
  if (!duplicate.empty())
    return fail("header has the key '" + duplicate + "' more than once");

  const uint8_t *data = headerBegin + headerSize;
  uint64_t dataSize = size - 8 - headerSize;
  File file;
  std::vector<Entry> entries;
  for (const auto &item : header.items()) {
    if (item.key() == "__metadata__") {
      if (!item.value().is_object())
        return fail("field '__metadata__' is not a JSON object");
      for (const auto &meta : item.value().items()) {
        if (!meta.value().is_string())
          return fail("__metadata__ entry '" + meta.key() +
                      "' is not a string");
        file.metadata[meta.key()] = meta.value().get<std::string>();
      }
      continue;
    }
    Entry entry;
    if (item.key().empty())
      return fail("header has a tensor with an empty name");
    if (auto message = parseEntry(item.key(), item.value(), dataSize, entry))
      return fail(*message);
    entries.push_back(std::move(entry));
  }

  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  // The tensors cover the data region exactly, in order: no overlap, no
  // gap, nothing after the last one. A header size one byte off shifts every
  // tensor by a byte, which only this check notices.
  const Entry *previous = nullptr;
  uint64_t covered = 0;
  for (const Entry &entry : entries) {
    if (entry.begin < covered)
      return fail("tensors '" + previous->tensor.name + "' and '" + entry.tensor.name +
                  "' overlap in the data region");
    if (entry.begin > covered)
      return fail("tensor '" + entry.tensor.name + "' starts at byte " +
                  std::to_string(entry.begin) + " of the data region, but the tensors "
                  "before it end at byte " + std::to_string(covered) +
                  " (a gap: the tensors must cover the data region exactly)");
    covered = entry.end;
    previous = &entry;
  }
  if (covered != dataSize)
    return fail("the data region has " + std::to_string(dataSize) + " bytes but the tensors "
                "cover " + std::to_string(covered) + " (trailing bytes, or a wrong header "
                "size " + std::to_string(headerSize) + "); the file is corrupt");

  for (Entry &entry : entries) {
    entry.tensor.data.assign(data + entry.begin, data + entry.end);
    file.tensors.push_back(std::move(entry.tensor));
  }
  out = std::move(file);
  return true;
}

bool readFile(const std::string &path, File &out, std::string &error) {
  std::vector<uint8_t> bytes;
  std::string problem;
  bool opened;
  if (!runtime::readRegularFile(path, bytes, problem, opened)) {
    error = opened ? path + ": cannot read: " + problem
                   : path + ": cannot open: " + problem + "; pass a safetensors file";
    return false;
  }
  return parse(bytes.data(), bytes.size(), path, out, error);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

bool serialize(const File &file, std::vector<uint8_t> &out, std::string &error) {
  json header = json::object();
  if (!file.metadata.empty())
    header["__metadata__"] = file.metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const Tensor &t : file.tensors) {
    if (t.name.empty() || t.name == "__metadata__" ||
        !names.insert(t.name).second) {
      error = "tensor name '" + t.name + "' is empty, reserved or duplicated";
      return false;
    }
    std::optional<uint64_t> bytes = byteSize(t.shape, dtypeSize(t.dtype));
    bool negative = std::any_of(t.shape.begin(), t.shape.end(),
                                [](int64_t d) { return d < 0; });
    if (negative || !bytes || *bytes != t.data.size()) {
      error = "tensor '" + t.name + "' has " + std::to_string(t.data.size()) +
              " bytes of data, which does not match shape " +
              shapeToString(t.shape) + " of " + dtypeName(t.dtype);
      return false;
    }
    header[t.name] = {{"dtype", dtypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + *bytes}}};
    offset += *bytes;
  }
  std::string text =
      header.dump(-1, ' ', false, json::error_handler_t::replace);
  text.append((8 - text.size() % 8) % 8, ' '); // align the data region
  out.clear();
  out.reserve(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<uint8_t>(uint64_t(text.size()) >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const Tensor &t : file.tensors)
    out.insert(out.end(), t.data.begin(), t.data.end());
  return true;
}

bool writeFile(const std::string &path, const File &file, std::string &error) {
  std::vector<uint8_t> bytes;
  if (!serialize(file, bytes, error)) {
    error = path + ": " + error;
    return false;
  }
  return writeFileAtomically(path, bytes, error);
}

bool writeFileAtomically(const std::string &path, const std::vector<uint8_t> &bytes,
                         std::string &error) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = systemError("create", temp);
    return false;
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += static_cast<std::size_t>(n);
  }
  bool ok = done == bytes.size() && ::fsync(fd) == 0;
  if (!ok)
    error = systemError("write", temp);
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = systemError("close", temp);
  }
  if (ok && ::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    error = systemError("rename to " + path, temp);
  }
  if (!ok) {
    ::unlink(temp.c_str());
    return false;
  }
  syncParentDirectory(path);
  return true;
}

void syncParentDirectory(const std::string &path) {
  // Best effort: some file systems refuse fsync on directories.
  std::size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
}

} // namespace tg::safetensors
