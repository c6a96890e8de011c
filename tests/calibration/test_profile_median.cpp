// median_of_passes (app/calibration/profile_median.h): each point's times are the median over the passes, the
// grids must match, the passes' durations add up. Every expected figure is picked by hand from the inputs.
#include <gtest/gtest.h>

#include <stdexcept>

#include "calibration/profile_median.h"

namespace shardscope::calibration {
namespace {

// One pass with a single point in every kind of curve, its times all `t` (the overheads t/1000).
DeviceProfile pass(double t) {
  DeviceProfile p;
  p.machine_name = "test";
  p.seconds_taken = 10;
  p.launch_s = t / 1000;
  p.gemm["float32"] = {{"forward", 64, 128, 256, 1, t}};
  p.attention["float32"] = {{"gpt2_block_core", 8, 48, 32, t, 2 * t}};
  p.elementwise["relu"]["float32"] = {{4096, t, 1024, 0}};
  p.optimizer["adam"] = {{1000, t, 0, 4}};
  p.concurrency["gemm"] = {{2, 1 + t}};
  p.collectives["all_reduce"] = {{2, 1 << 20, t}};
  return p;
}

TEST(ProfileMedian, EachPointIsItsMedianOverThePasses) {
  const DeviceProfile m = median_of_passes({pass(3), pass(1), pass(2)});
  EXPECT_EQ(m.gemm.at("float32")[0].seconds, 2);
  EXPECT_EQ(m.gemm.at("float32")[0].m, 64);  // coordinates kept
  EXPECT_EQ(m.attention.at("float32")[0].forward_s, 2);
  EXPECT_EQ(m.attention.at("float32")[0].backward_s, 4);
  EXPECT_EQ(m.elementwise.at("relu").at("float32")[0].seconds, 2);
  EXPECT_EQ(m.optimizer.at("adam")[0].seconds, 2);
  EXPECT_EQ(m.concurrency.at("gemm")[0].slowdown, 3);
  EXPECT_EQ(m.collectives.at("all_reduce")[0].seconds, 2);
  EXPECT_EQ(m.launch_s, 2.0 / 1000);
  EXPECT_EQ(m.seconds_taken, 30);
  EXPECT_EQ(m.machine_name, "test");
}

TEST(ProfileMedian, AnEvenCountTakesTheLowerMedian) {
  EXPECT_EQ(median_of_passes({pass(4), pass(1), pass(3), pass(2)}).gemm.at("float32")[0].seconds, 2);
  EXPECT_EQ(median_of_passes({pass(5)}).gemm.at("float32")[0].seconds, 5);
}

TEST(ProfileMedian, PassesOfDifferentGridsAreRefused) {
  DeviceProfile other = pass(1);
  other.gemm["float32"][0].m = 16;
  EXPECT_THROW(median_of_passes({pass(1), other}), std::logic_error);
  DeviceProfile longer = pass(1);
  longer.optimizer["adam"].push_back({2000, 1, 0, 4});
  EXPECT_THROW(median_of_passes({pass(1), longer}), std::logic_error);
  DeviceProfile missing = pass(1);
  missing.collectives.clear();
  EXPECT_THROW(median_of_passes({pass(1), missing}), std::logic_error);
  EXPECT_THROW(median_of_passes({}), std::logic_error);
}

}  // namespace
}  // namespace shardscope::calibration
