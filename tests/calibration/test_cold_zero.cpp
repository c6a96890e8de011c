// Cold timing (app/calibration/calibrate_elementwise.cpp): the "zero" curve is timed as the executor's zero-fill of
// a new allocation meets memory, a block last written a step ago, not one buffer filled again and again from the
// cache; the optimizer's states likewise. A backend that records the buffers each kernel got shows it: consecutive
// fills go to distinct buffers, 64 MiB of them on the CPU before one comes round again; consecutive optimizer steps
// read other states.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "calibration/calibration_parts.h"
#include "exec/cpu/cpu_backend.h"

namespace shardscope::calibration {
namespace {

// The CPU backend's rank, noting where each Zero kernel wrote.
class RecordingRank : public exec::RankBackend {
 public:
  explicit RecordingRank(exec::RankBackend& real) : real_(real) {}
  std::vector<const std::byte*> zeroed;

  int rank() const override { return real_.rank(); }
  exec::TrackingAllocator& allocator() override { return real_.allocator(); }
  struct OptimizerStep {
    std::size_t tensors = 0;
    std::vector<const std::byte*> operands;  // per tensor: parameter, gradient, then its states
  };
  std::vector<OptimizerStep> optimizer_steps;

  void run_kernel(const exec::KernelLaunch& l) override {
    if (l.kernel == Kernel::Zero) zeroed.push_back(l.operands.at(0).data);
    if (l.kernel == Kernel::OptimizerStep) {
      optimizer_steps.push_back({l.optimizer_steps.size(), {}});
      for (const exec::DeviceBuffer& b : l.operands) optimizer_steps.back().operands.push_back(b.data);
    }
    real_.run_kernel(l);
  }
  void run_communication(const exec::CommunicationLaunch& l) override { real_.run_communication(l); }
  void copy_from_host(const exec::DeviceBuffer& dst, std::span<const std::byte> src) override { real_.copy_from_host(dst, src); }
  void copy_to_host(std::span<std::byte> dst, const exec::DeviceBuffer& src) override { real_.copy_to_host(dst, src); }
  void fill_zero(const exec::DeviceBuffer& dst) override { real_.fill_zero(dst); }
  void synchronize(Stream stream) override { real_.synchronize(stream); }

 private:
  exec::RankBackend& real_;
};

TEST(ColdZero, EachFillWritesABufferNotFilledInTheLast64MiB) {
  exec::cpu::CpuBackend backend(1);
  RecordingRank rank(backend.rank(0));
  Context c;
  c.kind = exec::BackendKind::Cpu;
  c.rank = &rank;
  // A repetition of 100 s, which no count of 32 KiB fills reaches: KernelTimer then makes its most calls, 10,000 a
  // repetition, on any machine (a sanitizer build too), so the count below is the timer's, not the clock's. (100 s
  // over its 0.1 µs floor for one call still fits the int it converts to.)
  c.timer = KernelTimer(100, 3);
  constexpr std::int64_t kBytes = 32 << 10;
  constexpr std::size_t kCold = (std::size_t{64} << 20) / kBytes;  // 2,048 buffers
  EXPECT_GT(cold_zero_seconds(c, kBytes), 0);
  ASSERT_EQ(rank.zeroed.size(), 2 + 3 * 10000u);  // the warm-up, the call that sizes a repetition, 3 repetitions
  // No buffer filled twice within any 2,048 consecutive fills, and 2,048 used in all.
  std::map<const std::byte*, std::size_t> last;
  for (std::size_t i = 0; i < rank.zeroed.size(); ++i) {
    if (const auto found = last.find(rank.zeroed[i]); found != last.end()) {
      ASSERT_GE(i - found->second, kCold) << "fill " << i << " rewrote the buffer of fill " << found->second;
    }
    last[rank.zeroed[i]] = i;
  }
  EXPECT_EQ(last.size(), kCold);
}

// The optimizer curves: a step's parameters and gradients were used in the backward just before it, its states
// (momentum, Adam's two moments) a step ago. So consecutive timed steps of one size share their parameters and
// gradients and read other states; SGD, with none, repeats the same operands.
TEST(ColdZero, OptimizerStepsRotateTheirStatesOnly) {
  exec::cpu::CpuBackend backend(1);
  RecordingRank rank(backend.rank(0));
  DeviceProfile profile;
  Context c;
  c.kind = exec::BackendKind::Cpu;
  c.rank = &rank;
  c.quick = true;  // 4,096 and 16,384 parameters, tensors of 4,096
  c.profile = &profile;
  c.timer = KernelTimer(0.001, 3);
  calibrate_optimizers(c);
  // The steps of one point share their first parameter.
  std::map<const std::byte*, std::vector<RecordingRank::OptimizerStep>> by_point;
  for (const auto& step : rank.optimizer_steps) by_point[step.operands.at(0)].push_back(step);
  ASSERT_EQ(by_point.size(), 4u * 2);  // adam, adamw, sgd, momentum × 2 sizes
  std::map<std::size_t, int> points_by_states;
  for (const auto& [first, steps] : by_point) {
    ASSERT_GE(steps.size(), 5u);  // the warm-up, the sizing call, 3 repetitions of at least one call
    const std::size_t stride = steps[0].operands.size() / steps[0].tensors;  // 2 + states
    ++points_by_states[stride - 2];
    for (std::size_t i = 1; i < steps.size(); ++i)
      for (std::size_t k = 0; k < steps[i].operands.size(); ++k) {
        const bool state = k % stride >= 2;
        if (state) EXPECT_NE(steps[i].operands[k], steps[i - 1].operands[k]) << "step " << i << " operand " << k;
        else EXPECT_EQ(steps[i].operands[k], steps[i - 1].operands[k]) << "step " << i << " operand " << k;
      }
  }
  EXPECT_EQ(points_by_states, (std::map<std::size_t, int>{{0, 2}, {1, 2}, {2, 4}}));  // sgd, momentum, adam(w)
}

}  // namespace
}  // namespace shardscope::calibration
