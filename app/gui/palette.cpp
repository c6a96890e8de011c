// Category and op colours (UI.md's Okabe–Ito table).
#include "gui/palette.h"

namespace shardscope::gui {

std::uint32_t category_rgb(Category category) {
  switch (category) {
    case Category::Parameters: return 0x0072B2;
    case Category::Gradients: return 0xE69F00;
    case Category::DdpBuckets: return 0xD55E00;
    case Category::OptimizerState: return 0x009E73;
    case Category::Activations: return 0xF0E442;
    case Category::Temporaries: return 0xCC79A7;
    case Category::CommunicationBuffers: return 0x56B4E9;
  }
  return kOutsideAllocatorRgb;
}

std::uint32_t op_rgb(const Op& op) {
  switch (op.kind) {
    case OpKind::Compute:
      switch (op.compute_kind) {
        case ComputeKind::Forward: return 0x8C9BAB;
        case ComputeKind::Backward: return 0x56616E;
        case ComputeKind::Loss:
        case ComputeKind::LossBackward: return 0x7A6F9B;
        case ComputeKind::Optimizer: return 0x009E73;
        case ComputeKind::Copy: return 0xB0A58F;
      }
      break;
    case OpKind::Collective:
      switch (op.collective_kind) {
        case CollectiveKind::AllReduce: return 0xD55E00;
        case CollectiveKind::ReduceScatter: return 0xE69F00;
        case CollectiveKind::AllGather: return 0x56B4E9;
        case CollectiveKind::Broadcast: return 0x0072B2;
        case CollectiveKind::Reduce: return 0xCC79A7;
        case CollectiveKind::Scatter:
        case CollectiveKind::Gather: return 0xA8786B;
      }
      break;
    case OpKind::Send:
    case OpKind::Recv: return 0xF0E442;
    default: break;
  }
  return 0x777777;
}

}  // namespace shardscope::gui
