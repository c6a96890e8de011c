// cold_zero_seconds (app/calibration/calibration_parts.h): the "zero" curve is timed as the executor's zero-fill of
// a new allocation meets memory, a block last written a step ago, not one buffer filled again and again from the
// cache. A backend that records which buffer each fill wrote shows it: consecutive fills go to distinct buffers,
// 64 MiB of them on the CPU before one comes round again.
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
  void run_kernel(const exec::KernelLaunch& l) override {
    if (l.kernel == Kernel::Zero) zeroed.push_back(l.operands.at(0).data);
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
    if (const auto found = last.find(rank.zeroed[i]); found != last.end())
      ASSERT_GE(i - found->second, kCold) << "fill " << i << " rewrote the buffer of fill " << found->second;
    last[rank.zeroed[i]] = i;
  }
  EXPECT_EQ(last.size(), kCold);
}

}  // namespace
}  // namespace shardscope::calibration
