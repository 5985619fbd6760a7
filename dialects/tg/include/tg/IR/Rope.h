#ifndef TG_IR_ROPE_H
#define TG_IR_ROPE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::tg {
/// The frequencies of a rotary position embedding: pair (i, i + D/2) of a
/// head at position t turns by t * frequency(i). tg.rope holds them, and so
/// do the flash attention ops that apply the rotation to their queries and
/// keys themselves (tg-fuse-attention), as the same optional attributes
/// (theta and Hugging Face's `rope_scaling`; see tg.rope).
struct RopeFrequencies {
  double theta = 0;
  std::optional<double> scalingFactor, lowFreqFactor, highFreqFactor,
      originalMaxPositions;

  /// From an op's attributes (null where absent).
  static RopeFrequencies of(FloatAttr theta, FloatAttr scalingFactor,
                            FloatAttr lowFreqFactor, FloatAttr highFreqFactor,
                            FloatAttr originalMaxPositions);
  /// Those attributes, in that order (null where absent).
  struct Attributes {
    FloatAttr theta, scalingFactor, lowFreqFactor, highFreqFactor,
        originalMaxPositions;
  };
  Attributes attributes(Builder &b) const;

  /// The frequency of pair i of a head of `dim` elements, in f64.
  double frequency(int64_t i, int64_t dim) const;
  /// Why these frequencies are not a rotation the ops accept (empty when
  /// they are).
  std::string invalidity() const;

  bool operator==(const RopeFrequencies &o) const {
    return theta == o.theta && scalingFactor == o.scalingFactor &&
           lowFreqFactor == o.lowFreqFactor &&
           highFreqFactor == o.highFreqFactor &&
           originalMaxPositions == o.originalMaxPositions;
  }
};
} // namespace mlir::tg

#endif
