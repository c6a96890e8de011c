// ComputeWork's pool: every distinct work once for the life of the process, in fixed blocks that never move, so
// that reading an op's work (the simulator, once per op) takes no lock; interning (lowering, possibly on several
// threads: the window lowers on a worker) takes one.
#include "plan/compute_work.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace shardscope {

namespace {

constexpr std::uint32_t kBlockBits = 12;
constexpr std::uint32_t kBlockSize = 1u << kBlockBits;
constexpr std::uint32_t kBlocks = 1u << (24 - kBlockBits);

struct WorkHash {
  std::size_t operator()(const ComputeWork& w) const {
    std::size_t h = static_cast<std::size_t>(w.kind) | static_cast<std::size_t>(w.element) << 8 |
                    static_cast<std::size_t>(w.layout) << 16;
    for (const std::int64_t v : {w.m, w.n, w.k, w.batch}) h = h * 1000003u ^ std::hash<std::int64_t>{}(v);
    return h;
  }
};

struct Pool {
  std::mutex mutex;
  std::unordered_map<ComputeWork, std::uint32_t, WorkHash> index;
  std::array<std::atomic<const ComputeWork*>, kBlocks> blocks{};
  std::uint32_t next = 1;  // 0: the Unknown work every default WorkId reads

  Pool() {
    auto* first = new ComputeWork[kBlockSize];  // never freed: handles outlive any owner
    blocks[0].store(first, std::memory_order_release);
  }
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: ops may be read during static destruction
  return *p;
}

}  // namespace

WorkId::WorkId(const ComputeWork& work) {
  if (work.kind == WorkKind::Unknown) return;
  Pool& p = pool();
  const std::lock_guard lock(p.mutex);
  std::uint32_t at = 0;
  if (const auto found = p.index.find(work); found != p.index.end()) {
    at = found->second;
  } else {
    if (p.next >= kBlockSize * kBlocks) return;  // full: the op keeps no work (see the header)
    at = p.next++;
    const std::uint32_t block = at >> kBlockBits;
    auto* slots = const_cast<ComputeWork*>(p.blocks[block].load(std::memory_order_relaxed));
    if (slots == nullptr) slots = new ComputeWork[kBlockSize];
    slots[at & (kBlockSize - 1)] = work;
    // Published after the slot is written: a reader that sees this handle sees the work.
    p.blocks[block].store(slots, std::memory_order_release);
    p.index.emplace(work, at);
  }
  bytes_ = {static_cast<std::uint8_t>(at), static_cast<std::uint8_t>(at >> 8), static_cast<std::uint8_t>(at >> 16)};
}

const ComputeWork& WorkId::get() const {
  const std::uint32_t at = index();
  const ComputeWork* slots = pool().blocks[at >> kBlockBits].load(std::memory_order_acquire);
  return slots[at & (kBlockSize - 1)];
}

const char* work_kind_name(WorkKind kind) {
  switch (kind) {
    case WorkKind::Unknown: return "unknown";
    case WorkKind::Gemm: return "gemm";
    case WorkKind::Attention: return "attention";
    case WorkKind::AttentionBackward: return "attention_backward";
    case WorkKind::Copy: return "copy";
    case WorkKind::Unary: return "unary";
    case WorkKind::Binary: return "binary";
    case WorkKind::Relu: return "relu";
    case WorkKind::ReluBackward: return "relu_backward";
    case WorkKind::Reduction: return "reduction";
    case WorkKind::Softmax: return "softmax";
    case WorkKind::SoftmaxBackward: return "softmax_backward";
    case WorkKind::LayerNorm: return "layer_norm";
    case WorkKind::LayerNormBackward: return "layer_norm_backward";
    case WorkKind::MseLoss: return "mse_loss";
    case WorkKind::MseLossBackward: return "mse_loss_backward";
  }
  return "unknown";
}

const char* gemm_layout_name(GemmLayout layout) {
  switch (layout) {
    case GemmLayout::Forward: return "forward";
    case GemmLayout::InputGrad: return "input_grad";
    case GemmLayout::WeightGrad: return "weight_grad";
    case GemmLayout::Batched: return "batched";
  }
  return "forward";
}

}  // namespace shardscope
