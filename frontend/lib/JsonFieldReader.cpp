#include "tg/Frontend/JsonFieldReader.h"
#include "tg/runtime/JsonNesting.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstdio>

using namespace llvm;
using namespace mlir::tg::frontend;

std::string mlir::tg::frontend::formatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

JsonFieldReader::JsonFieldReader(std::string file, const json::Object *object,
                                 std::string path)
    : JsonFieldReader(std::move(file), object, std::move(path),
                      std::make_shared<std::string>()) {}

JsonFieldReader::JsonFieldReader(std::string file, const json::Object *object,
                                 std::string path,
                                 std::shared_ptr<std::string> error)
    : file(std::move(file)), fields(object), path(std::move(path)),
      firstError(std::move(error)) {}

Expected<json::Value> JsonFieldReader::parseFile(StringRef path,
                                                  std::optional<StringRef> text) {
  auto buffer = text ? MemoryBuffer::getMemBuffer(*text, path)
                     : MemoryBuffer::getFile(path);
  if (!buffer)
    return createStringError(buffer.getError(), "%s: cannot read: %s",
                             path.str().c_str(),
                             buffer.getError().message().c_str());
  if (std::optional<size_t> at = ::tg::runtime::findTooDeepNesting(
          (*buffer)->getBufferStart(), (*buffer)->getBufferSize(),
          kMaxJsonDepth))
    return createStringError(
        inconvertibleErrorCode(),
        "%s: malformed JSON: arrays and objects nest deeper than %d levels "
        "(at byte %zu); a config file needs only a few",
        path.str().c_str(), kMaxJsonDepth, *at);
  Expected<json::Value> value = json::parse((*buffer)->getBuffer());
  if (!value)
    return createStringError(inconvertibleErrorCode(),
                             "%s: malformed JSON: %s", path.str().c_str(),
                             toString(value.takeError()).c_str());
  if (!value->getAsObject())
    return createStringError(inconvertibleErrorCode(),
                             "%s: expected a JSON object at the top level",
                             path.str().c_str());
  return value;
}

std::string JsonFieldReader::fieldName(StringRef key) const {
  return path.empty() ? key.str() : path + "." + key.str();
}

void JsonFieldReader::fail(StringRef key, const Twine &message) {
  if (firstError->empty())
    *firstError = describe(key, message);
}

bool JsonFieldReader::has(StringRef key) const {
  return fields && fields->get(key) && !fields->get(key)->getAsNull();
}

const json::Value *JsonFieldReader::raw(StringRef key) const {
  return has(key) ? fields->get(key) : nullptr;
}

const json::Value *JsonFieldReader::lookup(StringRef key, bool required) {
  if (has(key))
    return fields->get(key);
  if (required)
    fail(key, "missing; add it to the file");
  return nullptr;
}

int64_t JsonFieldReader::requiredInt(StringRef key, int64_t min, int64_t max,
                                     StringRef why) {
  if (!lookup(key, /*required=*/true))
    return min;
  return optionalInt(key, min, min, max, why);
}

int64_t JsonFieldReader::optionalInt(StringRef key, int64_t fallback,
                                     int64_t min, int64_t max, StringRef why) {
  const json::Value *v = lookup(key, /*required=*/false);
  if (!v)
    return fallback;
  std::string range = max == INT64_MAX
                          ? ">= " + std::to_string(min)
                          : "from " + std::to_string(min) + " to " +
                                std::to_string(max);
  std::string reason = why.empty() ? "" : " (" + why.str() + ")";
  // llvm::json's getAsInteger turns a double of exactly 2^63 (as in
  // 9223372036854775804., which its range check lets through) into an
  // int64: undefined behaviour (found by fuzz_train_config). Numbers from
  // 2^63 up are out of every field's range, so they never get there.
  std::optional<double> asDouble = v->getAsNumber();
  std::optional<int64_t> i;
  if (!asDouble || std::fabs(*asDouble) < 0x1p63)
    i = v->getAsInteger();
  if (!i) {
    // A whole number out of int64's range (9223372036854775808, 1e30).
    std::optional<double> d = v->getAsNumber();
    if (d && std::isfinite(*d) && std::trunc(*d) == *d)
      fail(key, "is " + formatNumber(*d) + ", expected an integer " + range +
                    reason);
    else
      fail(key, "expected an integer " + range);
    return fallback;
  }
  if (*i < min || *i > max) {
    fail(key, "is " + Twine(*i) + ", expected an integer " + range +
                  (*i > max ? reason : ""));
    return fallback;
  }
  return *i;
}

double JsonFieldReader::requiredNumber(StringRef key, double min,
                                       bool minExclusive) {
  if (!lookup(key, /*required=*/true))
    return min;
  return optionalNumber(key, min, min, minExclusive);
}

double JsonFieldReader::optionalNumber(StringRef key, double fallback,
                                       double min, bool minExclusive) {
  const json::Value *v = lookup(key, /*required=*/false);
  if (!v)
    return fallback;
  std::optional<double> d = v->getAsNumber();
  const char *bound = minExclusive ? "> " : ">= ";
  if (!d) {
    fail(key, "expected a number " + Twine(bound) + formatNumber(min));
    return fallback;
  }
  if (!std::isfinite(*d)) {
    fail(key, "is " + formatNumber(*d) + ", expected a finite number " +
                  Twine(bound) + formatNumber(min));
    return fallback;
  }
  if (*d < min || (minExclusive && *d == min)) {
    fail(key, "is " + formatNumber(*d) + ", expected a number " + Twine(bound) +
                  formatNumber(min));
    return fallback;
  }
  return *d;
}

bool JsonFieldReader::optionalBool(StringRef key, bool fallback) {
  const json::Value *v = lookup(key, /*required=*/false);
  if (!v)
    return fallback;
  if (std::optional<bool> b = v->getAsBoolean())
    return *b;
  fail(key, "expected true or false");
  return fallback;
}

std::string JsonFieldReader::requiredString(StringRef key) {
  if (!lookup(key, /*required=*/true))
    return "";
  return optionalString(key, "");
}

std::string JsonFieldReader::optionalString(StringRef key,
                                            StringRef fallback) {
  const json::Value *v = lookup(key, /*required=*/false);
  if (!v)
    return fallback.str();
  if (std::optional<StringRef> s = v->getAsString())
    return s->str();
  fail(key, "expected a string");
  return fallback.str();
}

JsonFieldReader JsonFieldReader::object(StringRef key, bool required) {
  const json::Value *v = lookup(key, required);
  const json::Object *nested = v ? v->getAsObject() : nullptr;
  if (v && !nested)
    fail(key, "expected a JSON object");
  return JsonFieldReader(file, nested, fieldName(key), firstError);
}

void JsonFieldReader::rejectUnknownKeys(ArrayRef<StringRef> known) {
  if (!fields)
    return;
  for (const auto &entry : *fields)
    if (!llvm::is_contained(known, entry.first.str()))
      fail(entry.first.str(),
           "unknown field; expected one of: " + llvm::join(known, ", "));
}

std::vector<std::string>
JsonFieldReader::keysOutside(ArrayRef<StringRef> known) const {
  std::vector<std::string> keys;
  if (fields)
    for (const auto &entry : *fields)
      if (!llvm::is_contained(known, entry.first.str()))
        keys.push_back(entry.first.str());
  llvm::sort(keys);
  return keys;
}

std::string JsonFieldReader::describe(StringRef key,
                                      const Twine &message) const {
  return (file + ": field '" + fieldName(key) + "': " + message).str();
}

Error JsonFieldReader::takeError() {
  if (firstError->empty())
    return Error::success();
  std::string message = *firstError;
  firstError->clear();
  return createStringError(inconvertibleErrorCode(), message);
}
