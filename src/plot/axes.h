// Axis layout for Visualize's plots: data ranges, margins and tick positions,
// decided from the data alone (no drawing), so they can be tested as numbers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace codefy::plot {

/// What a line plot's x axis counts.
enum class XAxis {
  kIndex,  ///< positions of the values: 0, 1, 2...
  kEpoch,  ///< a history with one value per epoch: epochs 1, 2, 3...
};

/// A span of values on one axis.
struct Range {
  double lo = 0.0;
  double hi = 1.0;
  bool any = false;  ///< whether any finite value was seen
};

/// The span of the finite values among `values[0..n)`; [0, 1] with any=false when there are none.
Range finite_range(const double* values, int64_t n);

/// An axis range PLplot can draw: never empty, never infinite, with
/// matplotlib's 5% margin when `margin` is set.
Range axis_range(Range r, bool margin);

/// A 1-2-5 whole-number tick step giving at most about `max_ticks` ticks over `span`.
double integer_tick_step(double span, int max_ticks);

/// The x axis of a line plot of `points` values.
struct LineXAxis {
  std::string label;          ///< "Index" or "Epoch"
  double first = 0.0;         ///< x of the first value: 0 for an index, 1 for an epoch
  Range range;                ///< the drawn span, margins included
  std::vector<double> ticks;  ///< labelled tick positions, whole numbers, ascending
};

/// Lays out the x axis of a line plot of `points` (>= 1) values with at most
/// about `max_ticks` ticks: the first value's position, then the multiples of
/// a 1-2-5 step up to the last value (epochs read 1, 5, 10, 15...).
LineXAxis line_x_axis(int64_t points, XAxis axis, int max_ticks = 8);

}  // namespace codefy::plot
