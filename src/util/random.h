// Seed mixing: one splitmix64 and one string hash for every place that
// derives a seed from another (per node, per epoch, per shuffle).
#pragma once

#include <cstdint>
#include <string_view>

namespace codefy::util {

/// splitmix64's finaliser (Steele et al.): spreads nearby inputs (seed,
/// epoch) over all 64 bits.
constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// 64-bit FNV-1a of `text`.
constexpr uint64_t fnv1a(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

}  // namespace codefy::util
