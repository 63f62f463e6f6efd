// Axis layout: ranges with margins, and line plots' x axes (index from 0, epoch
// from 1) with whole-number ticks.
#include "plot/axes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace codefy::plot {
namespace {

TEST(LineXAxis, EpochHistorySaysEpochAndStartsAtOne) {
  const LineXAxis two = line_x_axis(2, XAxis::kEpoch);
  EXPECT_EQ(two.label, "Epoch");
  EXPECT_EQ(two.first, 1.0);
  EXPECT_EQ(two.ticks, (std::vector<double>{1, 2}));  // not 0.5, 1.0, 1.5
  EXPECT_GT(two.range.lo, 0.0);                       // epoch 0 is not on the axis
  EXPECT_LT(two.range.lo, 1.0);
  EXPECT_GT(two.range.hi, 2.0);

  const LineXAxis one = line_x_axis(1, XAxis::kEpoch);
  EXPECT_EQ(one.ticks, (std::vector<double>{1}));
  EXPECT_DOUBLE_EQ(one.range.lo, 0.5);
  EXPECT_DOUBLE_EQ(one.range.hi, 1.5);
}

TEST(LineXAxis, LongHistoriesTickTheFirstEpochThenRoundNumbers) {
  EXPECT_EQ(line_x_axis(40, XAxis::kEpoch).ticks, (std::vector<double>{1, 5, 10, 15, 20, 25, 30, 35, 40}));
  EXPECT_EQ(line_x_axis(12, XAxis::kEpoch).ticks, (std::vector<double>{1, 2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(line_x_axis(100, XAxis::kEpoch).ticks, (std::vector<double>{1, 20, 40, 60, 80, 100}));
  EXPECT_EQ(line_x_axis(5, XAxis::kEpoch).ticks, (std::vector<double>{1, 2, 3, 4, 5}));
  // A narrow plot asks for fewer ticks.
  EXPECT_EQ(line_x_axis(40, XAxis::kEpoch, 2).ticks, (std::vector<double>{1, 20, 40}));
}

TEST(LineXAxis, IndexStartsAtZero) {
  const LineXAxis x = line_x_axis(2, XAxis::kIndex);
  EXPECT_EQ(x.label, "Index");
  EXPECT_EQ(x.first, 0.0);
  EXPECT_EQ(x.ticks, (std::vector<double>{0, 1}));
  EXPECT_EQ(line_x_axis(200, XAxis::kIndex).ticks, (std::vector<double>{0, 50, 100, 150}));
}

TEST(LineXAxis, TicksAreWholeNumbersOnTheData) {
  for (const XAxis axis : {XAxis::kIndex, XAxis::kEpoch}) {
    for (int64_t points : {1, 2, 3, 7, 10, 11, 99, 1000, 123457}) {
      const LineXAxis x = line_x_axis(points, axis);
      const double last = x.first + static_cast<double>(points - 1);
      ASSERT_FALSE(x.ticks.empty());
      EXPECT_EQ(x.ticks.front(), x.first) << points;
      EXPECT_LE(x.ticks.size(), 9u) << points;
      for (size_t i = 0; i < x.ticks.size(); ++i) {
        EXPECT_EQ(x.ticks[i], std::floor(x.ticks[i])) << points;
        EXPECT_LE(x.ticks[i], last) << points;
        if (i > 0) {
          EXPECT_GT(x.ticks[i], x.ticks[i - 1]) << points;
        }
      }
      EXPECT_LT(x.range.lo, x.first);
      EXPECT_GT(x.range.hi, last);
    }
  }
}

TEST(AxisRange, MarginsAndDegenerateSpans) {
  const Range r = axis_range({0.0, 10.0, true}, true);
  EXPECT_DOUBLE_EQ(r.lo, -0.5);
  EXPECT_DOUBLE_EQ(r.hi, 10.5);
  const Range flat = axis_range({3.0, 3.0, true}, false);
  EXPECT_DOUBLE_EQ(flat.lo, 2.5);
  EXPECT_DOUBLE_EQ(flat.hi, 3.5);
  const Range huge = axis_range({-1e308, 1e308, true}, true);
  EXPECT_TRUE(std::isfinite(huge.hi - huge.lo));
}

TEST(FiniteRange, SkipsNonFiniteValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double values[] = {nan, 2.0, -std::numeric_limits<double>::infinity(), -1.0};
  const Range r = finite_range(values, 4);
  EXPECT_TRUE(r.any);
  EXPECT_EQ(r.lo, -1.0);
  EXPECT_EQ(r.hi, 2.0);
  const double none[] = {nan};
  EXPECT_FALSE(finite_range(none, 1).any);
}

TEST(IntegerTickStep, OneTwoFive) {
  EXPECT_EQ(integer_tick_step(0, 8), 1);
  EXPECT_EQ(integer_tick_step(8, 8), 1);
  EXPECT_EQ(integer_tick_step(11, 8), 2);
  EXPECT_EQ(integer_tick_step(39, 8), 5);
  EXPECT_EQ(integer_tick_step(99, 8), 20);
  EXPECT_EQ(integer_tick_step(1e6, 8), 200000);
}

}  // namespace
}  // namespace codefy::plot
