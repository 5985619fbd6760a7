#ifndef TG_FRONTEND_JSONFIELDREADER_H
#define TG_FRONTEND_JSONFIELDREADER_H

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tg::frontend {

/// Reads typed, range-checked fields from one JSON object of a config file.
/// The first problem is kept and later reads return their fallback, so a
/// caller reads every field and then asks once for the error, which names the
/// file and the field ("model.json: field 'n_head': ...").
class JsonFieldReader {
public:
  JsonFieldReader(std::string file, const llvm::json::Object *object,
                  std::string path = "");

  /// Parses `path` as a JSON object; the error names the file and position.
  /// Arrays and objects nest at most kMaxJsonDepth deep (checked before
  /// parsing: the parser recurses once per level).
  /// `text` when given (an in-memory file called `path` in messages), else
  /// the file at `path`.
  static llvm::Expected<llvm::json::Value>
  parseFile(llvm::StringRef path, std::optional<llvm::StringRef> text = std::nullopt);

  /// An integer in [min, max]; one above `max` is reported with the bound
  /// and, when given, `why` ("is 20000, expected an integer from 1 to 10000
  /// (why)").
  int64_t requiredInt(llvm::StringRef key, int64_t min,
                      int64_t max = INT64_MAX, llvm::StringRef why = "");
  int64_t optionalInt(llvm::StringRef key, int64_t fallback, int64_t min,
                      int64_t max = INT64_MAX, llvm::StringRef why = "");
  /// Numbers are finite: `1e400` (which JSON readers take as inf) is an error.
  double requiredNumber(llvm::StringRef key, double min, bool minExclusive);
  double optionalNumber(llvm::StringRef key, double fallback, double min,
                        bool minExclusive);
  bool optionalBool(llvm::StringRef key, bool fallback);
  std::string requiredString(llvm::StringRef key);
  std::string optionalString(llvm::StringRef key, llvm::StringRef fallback);
  /// A nested object; an absent or mistyped one records an error when
  /// `required`, and yields a reader over nothing otherwise.
  JsonFieldReader object(llvm::StringRef key, bool required);
  bool has(llvm::StringRef key) const;
  const llvm::json::Value *raw(llvm::StringRef key) const;

  /// Records an error about `key` unless one is already recorded.
  void fail(llvm::StringRef key, const llvm::Twine &message);
  /// Records an error for every key not in `known` (catches typos).
  void rejectUnknownKeys(llvm::ArrayRef<llvm::StringRef> known);
  /// The keys not in `known`, sorted.
  std::vector<std::string> keysOutside(llvm::ArrayRef<llvm::StringRef> known) const;
  /// "FILE: field 'KEY': MESSAGE", as errors read (for warnings).
  std::string describe(llvm::StringRef key, const llvm::Twine &message) const;
  /// Whether an error is recorded.
  bool failed() const { return !firstError->empty(); }
  /// The first recorded error, shared with the readers of nested objects.
  llvm::Error takeError();

private:
  JsonFieldReader(std::string file, const llvm::json::Object *object,
                  std::string path, std::shared_ptr<std::string> error);
  const llvm::json::Value *lookup(llvm::StringRef key, bool required);
  std::string fieldName(llvm::StringRef key) const;

  std::string file;
  const llvm::json::Object *fields;
  std::string path;
  std::shared_ptr<std::string> firstError;
};

/// How deep arrays and objects may nest in a config file.
inline constexpr int kMaxJsonDepth = 64;

/// A number as a config file would spell it (1e-05, 0.02, 3).
std::string formatNumber(double value);

} // namespace mlir::tg::frontend

#endif
