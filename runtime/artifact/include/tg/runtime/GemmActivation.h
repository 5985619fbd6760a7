#ifndef TG_RUNTIME_GEMMACTIVATION_H
#define TG_RUNTIME_GEMMACTIVATION_H

// What a Gemm command's `activation` computes (tgx.fbs): GELU with the tanh
// approximation (GPT-2's gelu_new, cuBLASLt's GELU epilogue) and its
// derivative, in double. The CPU backend's epilogue rounds these to the
// element type once; the reference evaluator uses them as they are.

#include <cmath>

namespace tg::runtime {

inline constexpr double kGeluTanhCoefficient = 0.044715;

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline double geluTanh(double x) {
  double c = std::sqrt(2 / M_PI);
  return 0.5 * x * (1 + std::tanh(c * (x + kGeluTanhCoefficient * x * x * x)));
}

/// d/dx geluTanh(x).
inline double geluTanhDerivative(double x) {
  double c = std::sqrt(2 / M_PI);
  double t = std::tanh(c * (x + kGeluTanhCoefficient * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * kGeluTanhCoefficient * x * x);
}

} // namespace tg::runtime

#endif
