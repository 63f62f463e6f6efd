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

/// 64-bit FNV-1a of `text`; another `basis` gives an independent hash of the same text.
constexpr uint64_t fnv1a(std::string_view text, uint64_t basis = 1469598103934665603ULL) {
  uint64_t h = basis;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

/// 32-bit FNV-1a of `text` (the same in every process and on every machine).
constexpr uint32_t fnv1a32(std::string_view text) {
  uint32_t h = 0x811C9DC5u;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x01000193u;
  return h;
}

}  // namespace codefy::util
