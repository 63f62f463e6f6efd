// Axis layout: ranges with margins and whole-number ticks.
#include "plot/axes.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace codefy::plot {

Range finite_range(const double* values, int64_t n) {
  Range r;
  r.lo = std::numeric_limits<double>::infinity();
  r.hi = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) continue;
    r.lo = std::min(r.lo, values[i]);
    r.hi = std::max(r.hi, values[i]);
    r.any = true;
  }
  if (!r.any) {
    r.lo = 0.0;
    r.hi = 1.0;
  }
  return r;
}

Range axis_range(Range r, bool margin) {
  if (!(r.hi > r.lo)) {
    const double pad = std::max(0.5, std::abs(r.lo) * 0.05);
    r.lo -= pad;
    r.hi += pad;
  } else if (margin) {
    const double pad = (r.hi - r.lo) * 0.05;
    r.lo -= pad;
    r.hi += pad;
  }
  // Spans beyond double's range (values near ±1e308) would make PLplot's tick
  // arithmetic overflow; shrink to the largest span that still works.
  const double limit = std::numeric_limits<double>::max() / 8;
  r.lo = std::clamp(r.lo, -limit, limit);
  r.hi = std::clamp(r.hi, -limit, limit);
  return r;
}

double integer_tick_step(double span, int max_ticks) {
  max_ticks = std::max(max_ticks, 1);
  for (double magnitude = 1.0;; magnitude *= 10.0) {
    for (double factor : {1.0, 2.0, 5.0}) {
      if (span / (factor * magnitude) <= max_ticks) return factor * magnitude;
    }
  }
}

LineXAxis line_x_axis(int64_t points, XAxis axis, int max_ticks) {
  LineXAxis x;
  const bool epochs = axis == XAxis::kEpoch;
  x.label = epochs ? "Epoch" : "Index";
  x.first = epochs ? 1.0 : 0.0;
  const double last = x.first + static_cast<double>(std::max<int64_t>(points, 1) - 1);
  x.range = axis_range({x.first, last, true}, true);
  const double step = integer_tick_step(last - x.first, max_ticks);
  // The first value always gets a tick; after it, the round multiples of the
  // step, skipping one that would crowd it (closer than half a step).
  x.ticks.push_back(x.first);
  for (double t = std::ceil((x.first + step / 2) / step) * step; t <= last; t += step) x.ticks.push_back(t);
  return x;
}

}  // namespace codefy::plot
