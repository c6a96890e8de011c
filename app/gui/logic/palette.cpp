// Category and op colours (UI.md's Okabe–Ito table).
#include "gui/logic/palette.h"
#include "gui/logic/drawable_text.h"

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
    // Okabe–Ito has no ninth colour: a dark navy, the parameters' hue made heavier (whole, not sharded), far from
    // every timeline colour (NoTimelineColourIsAMemoryColour).
    case Category::GatheredParameters: return 0x1B3F73;
  }
  return kOutsideAllocatorRgb;
}

TimelineKind timeline_kind(const SpanKind& kind) {
  switch (kind.kind) {
    case OpKind::Compute:
      switch (kind.compute) {
        case ComputeKind::Forward:
        case ComputeKind::Loss: return TimelineKind::Forward;
        case ComputeKind::Backward:
        case ComputeKind::LossBackward: return TimelineKind::Backward;
        case ComputeKind::Optimizer: return TimelineKind::Optimizer;
        case ComputeKind::Copy: return TimelineKind::Copy;
      }
      break;
    case OpKind::Collective:
      switch (kind.collective) {
        case CollectiveKind::AllReduce: return TimelineKind::AllReduce;
        case CollectiveKind::ReduceScatter: return TimelineKind::ReduceScatter;
        case CollectiveKind::AllGather: return TimelineKind::AllGather;
        case CollectiveKind::Broadcast:
        case CollectiveKind::Reduce:
        case CollectiveKind::Scatter:
        case CollectiveKind::Gather: return TimelineKind::RootedCollective;
        case CollectiveKind::Barrier: break;  // takes no time: nothing to draw
      }
      break;
    case OpKind::Send:
    case OpKind::Recv: return TimelineKind::SendRecv;
    default: break;
  }
  return TimelineKind::Other;
}

std::uint32_t timeline_rgb(TimelineKind kind) {
  switch (kind) {
    case TimelineKind::Forward: return 0x4D4D4D;
    case TimelineKind::Backward: return 0x8C8C8C;
    case TimelineKind::Optimizer: return 0x332288;
    case TimelineKind::AllReduce: return 0x882255;
    case TimelineKind::ReduceScatter: return 0xAA4499;
    case TimelineKind::AllGather: return 0x117733;
    case TimelineKind::RootedCollective: return 0x999933;
    case TimelineKind::SendRecv: return 0x44AA99;
    case TimelineKind::Copy: return 0xB3B3B3;
    case TimelineKind::Other: break;
  }
  return 0x6E6E6E;
}

const char* timeline_label(TimelineKind kind) {
  switch (kind) {
    case TimelineKind::Forward: return "forward";
    case TimelineKind::Backward: return "backward";
    case TimelineKind::Optimizer: return "optimizer step";
    case TimelineKind::AllReduce: return "all-reduce";
    case TimelineKind::ReduceScatter: return "reduce-scatter";
    case TimelineKind::AllGather: return "all-gather";
    case TimelineKind::RootedCollective: return "broadcast / scatter / gather / reduce";
    case TimelineKind::SendRecv: return "send / recv";
    case TimelineKind::Copy: return "copy";
    case TimelineKind::Other: break;
  }
  return "other";
}

bool needs_light_text(std::uint32_t rgb) {
  // Relative luminance with the Rec. 709 weights on the 8-bit channels; below the middle, white reads better.
  const double r = (rgb >> 16) & 0xFF, g = (rgb >> 8) & 0xFF, b = rgb & 0xFF;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b < 128;
}

std::string timeline_box_label(const Op& op) {
  const TimelineKind kind = timeline_kind(op);
  // A trace's op labels are untrusted: cut to what one ImGui text item can hold (drawable_text.h).
  if (op.micro_batch < 0 || (kind != TimelineKind::Forward && kind != TimelineKind::Backward)) return drawable_text(op.label.str());
  return drawable_text((kind == TimelineKind::Forward ? "F" : "B") + std::to_string(op.micro_batch) + " " + op.label);
}

}  // namespace shardscope::gui
