// The random numbers behind tg_session_init_random: xoshiro256** seeded via
// splitmix64, and Box-Muller normals. Spelled out here rather than taken
// from <random> because std::normal_distribution differs between standard
// libraries, and a seed must give the same weights everywhere.
#ifndef TG_RUNTIME_API_RANDOM_H
#define TG_RUNTIME_API_RANDOM_H

#include <cstdint>

namespace tg::runtime {

/// splitmix64's output function: a bijective mix of 64 bits.
uint64_t splitmix64(uint64_t &state);

class Xoshiro256 {
public:
  explicit Xoshiro256(uint64_t seed);
  uint64_t next();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();

private:
  uint64_t s[4];
};

/// Standard normal samples; Box-Muller yields them in pairs.
class NormalSampler {
public:
  explicit NormalSampler(uint64_t seed) : rng(seed) {}
  double next();
  /// Moves past `count` samples as `count` calls of next() would, without
  /// computing them (a rank initialising its shard of a tensor skips the
  /// other ranks' elements).
  void skip(uint64_t count);

private:
  Xoshiro256 rng;
  bool hasSpare = false;
  double spare = 0;
};

} // namespace tg::runtime

#endif
