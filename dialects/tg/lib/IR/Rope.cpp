#include "tg/IR/Rope.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace mlir::tg {

static std::optional<double> valueOf(FloatAttr attr) {
  if (!attr)
    return std::nullopt;
  return attr.getValueAsDouble();
}

RopeFrequencies RopeFrequencies::of(FloatAttr theta, FloatAttr scalingFactor,
                                    FloatAttr lowFreqFactor,
                                    FloatAttr highFreqFactor,
                                    FloatAttr originalMaxPositions) {
  return {theta ? theta.getValueAsDouble() : 0.0, valueOf(scalingFactor),
          valueOf(lowFreqFactor), valueOf(highFreqFactor),
          valueOf(originalMaxPositions)};
}

RopeFrequencies::Attributes RopeFrequencies::attributes(Builder &b) const {
  auto attr = [&](std::optional<double> v) {
    return v ? b.getF64FloatAttr(*v) : FloatAttr();
  };
  return {b.getF64FloatAttr(theta), attr(scalingFactor), attr(lowFreqFactor),
          attr(highFreqFactor), attr(originalMaxPositions)};
}

double RopeFrequencies::frequency(int64_t i, int64_t dim) const {
  double f = std::pow(theta, -2.0 * double(i) / double(dim));
  if (!scalingFactor)
    return f;
  if (!lowFreqFactor)
    return f / *scalingFactor;
  double wavelength = 2 * M_PI / f;
  if (wavelength > *originalMaxPositions / *lowFreqFactor)
    return f / *scalingFactor;
  if (wavelength < *originalMaxPositions / *highFreqFactor)
    return f;
  double smooth = (*originalMaxPositions / wavelength - *lowFreqFactor) /
                  (*highFreqFactor - *lowFreqFactor);
  return (1 - smooth) * f / *scalingFactor + smooth * f;
}

std::string RopeFrequencies::invalidity() const {
  // Numbers as MLIR's diagnostics print them.
  std::string why;
  llvm::raw_string_ostream os(why);
  if (!std::isfinite(theta) || theta <= 0) {
    os << "theta must be positive and finite, got " << theta;
    return why;
  }
  std::pair<const char *, std::optional<double>> scalings[] = {
      {"scaling_factor", scalingFactor},
      {"low_freq_factor", lowFreqFactor},
      {"high_freq_factor", highFreqFactor},
      {"original_max_positions", originalMaxPositions}};
  for (auto &[name, value] : scalings)
    if (value && (!std::isfinite(*value) || *value <= 0)) {
      os << name << " must be positive and finite, got " << *value;
      return why;
    }
  bool llama3 = lowFreqFactor || highFreqFactor || originalMaxPositions;
  if (llama3 && !(lowFreqFactor && highFreqFactor && originalMaxPositions &&
                  scalingFactor))
    return "the llama3 scaling needs scaling_factor, low_freq_factor, "
           "high_freq_factor and original_max_positions";
  if (llama3 && *highFreqFactor <= *lowFreqFactor)
    os << "high_freq_factor (" << *highFreqFactor
       << ") must be above low_freq_factor (" << *lowFreqFactor << ")";
  return why;
}

} // namespace mlir::tg
