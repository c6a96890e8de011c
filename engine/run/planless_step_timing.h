// Step times of a run no plan describes — recorded from PyTorch (python/shardscope/record.py) or imported from a
// torch.profiler trace — from its spans and what their texts name (trace/store/span_kind.h), by step_timing.h's
// rules, so `trace info` and `compare` set a user's own step beside a simulated one:
// - a span counts in the step its OpBegin names (the recorder's step counter; step 0, set-up, has none);
// - compute: spans on the compute stream: the optimizer step (optimizer), spans whose text names a matrix product
//   (gemm: the recorder's Linear, Conv and attention modules; GEMM, convolution and attention kernels and ops), every
//   other (elementwise: the recorder's other leaf modules, other kernels). Where compute spans of a rank overlap (a
//   profiler's host threads, kernels of two streams) the overlap counts once, under the span that began first, so
//   the kinds still add up to the step;
// - communication: spans on the communication stream and those whose text names a collective or message, each a
//   transfer of its own (a recording does not say which spans of two ranks are one collective), so waiting inside
//   one counts as communication, not idle;
// - idle: the rest of the window. For a recording that is time in no leaf module's span: functional code (losses,
//   F.* calls), autograd's own work, zero_grad, Python, as well as waiting;
// - no batch loading: a script makes its batch before its step's first span, outside the window.
#pragma once
#include <vector>

#include "run/step_timing.h"
#include "trace/store/trace_store.h"

namespace shardscope {

std::vector<StepTiming> planless_step_timings(const TraceData& data);

}  // namespace shardscope
