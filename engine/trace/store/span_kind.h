// What a span of a plan-less trace is (one recorded from PyTorch by python/shardscope/record.py, or imported from a
// torch.profiler trace), read from the text its OpBegin carries, so the window colours it and the Chrome export
// names its category as they do a plan's op: a recorded backward is drawn as backward, a DDP bucket's all_reduce as
// an all-reduce, not every span in one grey.
// Texts it knows (anything else is not known, and drawn as "other"):
// - the recorder's: "forward NAME", "backward NAME", "optimizer step (Adam)", and torch.distributed's calls by name
//   ("all_reduce DDP bucket 0 25.00 MiB", "_all_gather_base 4.00 MiB", "broadcast", "isend", ...);
// - a profiler trace's: "autograd::engine::evaluate_function: AddmmBackward0" (backward), "Optimizer.step#AdamW.step"
//   (optimizer), NCCL kernels ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclKernel_SendRecv"), copies and
//   memsets ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)"), and kernels the importer prefixed with the phase
//   of their launch ("backward · sm80_xmma_gemm_...", "optimizer step · multi_tensor_apply_kernel..."). Other
//   kernels and host ops name no phase.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "plan/op.h"

namespace shardscope {

struct SpanKind {
  OpKind kind = OpKind::Compute;  // Compute, Collective, Send or Recv
  ComputeKind compute = ComputeKind::Forward;             // when kind is Compute
  CollectiveKind collective = CollectiveKind::AllReduce;  // when kind is Collective
  bool operator==(const SpanKind&) const = default;
};

inline SpanKind span_kind_of(const Op& op) { return {op.kind, op.compute_kind, op.collective_kind}; }

// Its name as the Chrome export's category: the compute kind ("backward"), the collective kind ("all-reduce") or the
// op kind ("send").
std::string span_kind_name(const SpanKind& kind);

// The kind a plan-less span's text names; nullopt when it names none.
std::optional<SpanKind> span_kind_of_text(std::string_view text);

// Whether a plan-less compute span is a matrix product (its time counts as gemm in a step's breakdown, as Linear
// layers and attention cores do in a plan's: run/step_timing.h). The recorder's module spans name the module's class
// last ("forward fc1 (Linear)"): Linear, Conv and attention modules are. Other texts are when they name a GEMM,
// convolution or attention kernel (cuBLAS' "gemm", "xmma", CUTLASS, "fmha", flash) or op (aten::mm, addmm, bmm,
// baddbmm, matmul, linear, convolution, scaled_dot_product_attention and their backward functions).
bool span_text_is_matmul(std::string_view text);

}  // namespace shardscope
