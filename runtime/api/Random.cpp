#include "Random.h"

#include <cmath>

namespace tg::runtime {

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Xoshiro256::Xoshiro256(uint64_t seed) {
  // splitmix64 never yields four zero words, the one state xoshiro forbids.
  for (uint64_t &word : s)
    word = splitmix64(seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t Xoshiro256::next() {
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double Xoshiro256::uniform() { return double(next() >> 11) * 0x1.0p-53; }

double NormalSampler::next() {
  if (hasSpare) {
    hasSpare = false;
    return spare;
  }
  double u1 = 1.0 - rng.uniform(); // (0, 1]: log stays finite
  double u2 = rng.uniform();
  double radius = std::sqrt(-2.0 * std::log(u1));
  double angle = 2.0 * M_PI * u2;
  spare = radius * std::sin(angle);
  hasSpare = true;
  return radius * std::cos(angle);
}

void NormalSampler::skip(uint64_t count) {
  if (count > 0 && hasSpare) {
    hasSpare = false;
    --count;
  }
  // Each pair of samples takes two uniforms.
  for (uint64_t i = 0; i < count / 2 * 2; ++i)
    rng.next();
  if (count % 2)
    next();
}

} // namespace tg::runtime
