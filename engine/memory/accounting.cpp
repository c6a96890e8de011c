// Replays each rank's alloc/free ops through the chosen accounting and records series, phases and peaks.
#include "memory/accounting.h"

#include "memory/caching_allocator.h"
#include "memory/late_frees.h"

#include <algorithm>

namespace shardscope {

std::string accounting_rules_label(AccountingMode mode) {
  switch (mode) {
    case AccountingMode::Exact: return "exact tensor bytes";
    case AccountingMode::PyTorch18: return "PyTorch 1.8 rules";
    case AccountingMode::PyTorch2: return "PyTorch 2.x rules";
  }
  return "?";
}

namespace {

// The tensors live right after `peak_op`, largest first (ties: earlier allocation first), from a second replay of
// the allocs and frees up to it: cheaper than copying the live set at every new maximum.
std::vector<LiveTensor> tensors_live_at(const Program& program, OpIndex peak_op, const std::vector<Bytes>& counted) {
  std::vector<OpIndex> allocated_at(program.tensors.size(), -1);
  for (OpIndex i = 0; i <= peak_op; ++i) {
    const Op& op = program.ops[static_cast<std::size_t>(i)];
    if (op.kind == OpKind::Alloc) allocated_at[static_cast<std::size_t>(op.tensor)] = i;
    if (op.kind == OpKind::Free) allocated_at[static_cast<std::size_t>(op.tensor)] = -1;
  }
  std::vector<LiveTensor> live;
  for (std::size_t t = 0; t < allocated_at.size(); ++t)
    if (allocated_at[t] >= 0) {
      const TensorInfo& info = program.tensors[t];
      live.push_back({static_cast<TensorId>(t), info.name, info.category, counted[t], allocated_at[t]});
    }
  std::sort(live.begin(), live.end(), [](const LiveTensor& a, const LiveTensor& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.allocated_at < b.allocated_at;
  });
  if (live.size() > kPeakTensors) live.resize(kPeakTensors);
  live.shrink_to_fit();  // the report keeps it for every rank: not the room every live tensor took
  return live;
}

RankMemory account_rank(const Program& program, AccountingMode mode, Bytes capacity, bool keep_series) {
  RankMemory rank;
  rank.rank = program.rank;
  const bool pytorch = mode != AccountingMode::Exact;
  CachingAllocatorModel allocator(capacity);
  LateFreeSchedule late_frees;
  std::vector<CachingAllocatorModel::BlockId> block_of(program.tensors.size(), -1);
  std::vector<Bytes> counted(program.tensors.size(), 0);
  CategoryBytes by_category;
  Bytes allocated = 0, reserved = 0, max_allocated = 0, max_reserved = 0;
  if (keep_series) {
    // One sample per alloc / free op: sized up front, as regrowing the series of a large plan costs more than counting.
    rank.series.reserve(static_cast<std::size_t>(std::count_if(program.ops.begin(), program.ops.end(), [](const Op& op) {
      return op.kind == OpKind::Alloc || op.kind == OpKind::Free;
    })));
  }

  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    const auto index = static_cast<OpIndex>(i);
    if (op.kind == OpKind::Phase) {
      late_frees.phase_marker();
      rank.phases.push_back({op.phase, op.step, index, allocated, max_allocated, reserved, max_reserved, by_category});
      continue;
    }
    if (op.kind != OpKind::Alloc && op.kind != OpKind::Free) continue;
    const auto t = static_cast<std::size_t>(op.tensor);
    const TensorInfo& tensor = program.tensors[t];
    if (op.kind == OpKind::Alloc) {
      const Bytes allocated_before = allocated, reserved_before = reserved;
      bool out_of_memory = false;
      if (pytorch) {
        if (late_frees.complete_before_allocation()) allocator.complete_requested_frees();
        const auto result = allocator.allocate(tensor.bytes, tensor.alloc_stream);
        block_of[t] = result.block;
        counted[t] = result.counted;
        out_of_memory = result.out_of_memory;
      } else {
        counted[t] = tensor.bytes;
        out_of_memory = allocated + tensor.bytes > capacity;
      }
      if (out_of_memory && !rank.oom) rank.oom = OutOfMemory{index, tensor.name, tensor.bytes, allocated_before, reserved_before};
      by_category[tensor.category] += counted[t];
      allocated += counted[t];
    } else {
      if (pytorch && tensor.free_completes_late) {
        allocator.free_requested(block_of[t]);
        late_frees.requested();
      } else if (pytorch) {
        allocator.free(block_of[t]);
      }
      by_category[tensor.category] -= counted[t];
      allocated -= counted[t];
    }
    reserved = pytorch ? allocator.reserved() : allocated;
    max_reserved = std::max(max_reserved, reserved);
    if (allocated > max_allocated) {
      max_allocated = allocated;
      rank.peak_allocated = allocated;
      rank.peak_op = index;
      rank.peak_by_category = by_category;
    }
    if (keep_series) rank.series.push_back({index, allocated, reserved, by_category});
  }
  rank.peak_reserved = max_reserved;
  if (rank.peak_op >= 0) rank.peak_tensors = tensors_live_at(program, rank.peak_op, counted);
  return rank;
}

// Whether account_rank reads the same inputs from both programs: ops of the same kinds, the same phases and steps
// at the phase markers, the same tensor ids at the allocs and frees, and tensors of the same sizes, categories and
// names. Data-parallel replicas usually do (1,023 of a 1,024-rank plan's ranks repeat their neighbour), and this scan
// costs a fraction of replaying the caching allocator.
bool same_accounting_inputs(const Program& a, const Program& b) {
  if (a.ops.size() != b.ops.size() || a.tensors.size() != b.tensors.size()) return false;
  for (std::size_t t = 0; t < a.tensors.size(); ++t) {
    const TensorInfo &x = a.tensors[t], &y = b.tensors[t];
    if (x.bytes != y.bytes || x.category != y.category || x.name != y.name || x.alloc_stream != y.alloc_stream ||
        x.free_completes_late != y.free_completes_late)
      return false;
  }
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const Op &x = a.ops[i], &y = b.ops[i];
    if (x.kind != y.kind) return false;
    if (x.kind == OpKind::Phase && (x.phase != y.phase || x.step != y.step)) return false;
    if ((x.kind == OpKind::Alloc || x.kind == OpKind::Free) && x.tensor != y.tensor) return false;
  }
  return true;
}

}  // namespace

MemoryReport account_memory(const Plan& plan, AccountingMode mode, Bytes capacity, bool keep_series) {
  MemoryReport report;
  report.mode = mode;
  report.rules = accounting_rules_label(mode);
  report.capacity = capacity;
  report.ranks.reserve(plan.programs.size());
  for (std::size_t r = 0; r < plan.programs.size(); ++r) {
    const Program& program = plan.programs[r];
    if (r > 0 && same_accounting_inputs(plan.programs[r - 1], program)) {
      report.ranks.push_back(report.ranks.back());  // the same replay would give the same figures
      report.ranks.back().rank = program.rank;
    } else {
      report.ranks.push_back(account_rank(program, mode, capacity, keep_series));
    }
  }
  return report;
}

}  // namespace shardscope
