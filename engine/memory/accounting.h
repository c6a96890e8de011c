// Memory accounting over a plan: per rank, allocated (and reserved) bytes after every allocation or free,
// by category, with figures at each phase marker and the peak. Two modes:
// - exact: tensor bytes, nothing cached (reserved == allocated);
// - pytorch-1.8 / pytorch-2: what torch.cuda.memory_allocated / memory_reserved report under the CUDA caching
//   allocator (memory/caching_allocator.h); a block's rounded size is charged to its tensor's category.
// Usage:
//   MemoryReport report = account_memory(plan, AccountingMode::PyTorch2, capacity);
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/category.h"
#include "plan/plan.h"
#include "scenario/scenario.h"

namespace shardscope {

struct MemorySample {
  OpIndex op = 0;           // the alloc or free op after which this holds
  Bytes allocated = 0;
  Bytes reserved = 0;
  CategoryBytes by_category;
};

struct PhaseMemory {
  std::string name;
  int step = 0;
  OpIndex op = 0;
  Bytes allocated = 0;
  Bytes max_allocated = 0;  // since the start, as torch.cuda.max_memory_allocated without a reset
  Bytes reserved = 0;
  Bytes max_reserved = 0;
  CategoryBytes by_category;
};

struct OutOfMemory {
  OpIndex op = 0;
  std::string tensor;
  Bytes requested = 0;
  Bytes allocated_before = 0;
  Bytes reserved_before = 0;
};

// A tensor live at a rank's peak: what "what sets my peak?" is answered with.
struct LiveTensor {
  TensorId tensor = -1;
  std::string name;       // the plan's tensor name ("fc7.weight grad", "DDP bucket 3", "exp_avg of fc4.weight")
  Category category = Category::Parameters;
  Bytes bytes = 0;        // as the accounting counts it (pytorch modes: the block's rounded size)
  OpIndex allocated_at = -1;  // the Alloc op
};

inline constexpr std::size_t kPeakTensors = 10;  // how many of the largest live tensors a report keeps

struct RankMemory {
  int rank = 0;
  std::vector<MemorySample> series;  // empty if not asked for
  std::vector<PhaseMemory> phases;
  Bytes peak_allocated = 0;
  OpIndex peak_op = -1;
  CategoryBytes peak_by_category;
  std::vector<LiveTensor> peak_tensors;  // the largest tensors live at the peak, largest first (at most kPeakTensors)
  Bytes peak_reserved = 0;
  std::optional<OutOfMemory> oom;  // the first allocation the device could not hold
};

struct MemoryReport {
  AccountingMode mode = AccountingMode::Exact;
  std::string rules;  // "PyTorch 2.x caching allocator rules" — stated beside every figure
  Bytes capacity = 0;
  std::vector<RankMemory> ranks;
};

MemoryReport account_memory(const Plan& plan, AccountingMode mode, Bytes capacity, bool keep_series = true);

std::string accounting_rules_label(AccountingMode mode);

}  // namespace shardscope
