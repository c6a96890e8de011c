// Converts a torch.profiler Chrome trace (prof.export_chrome_trace: JSON, gzipped too) into a trace.
// Ranks: each GPU the trace names (kernels' args.device, [memory] events of Device Type ≠ 0) is a rank, in id order,
// and the host (CPU ops, CPU [memory] events) is one more rank after them (rank 0 when there is no GPU).
// Spans: kernels on the GPU rank's compute stream (NCCL kernels on its communication stream, memcpy / memset on
// its copy stream); the host's CPU ops and user annotations, outermost per thread only (nested ops would cover
// each other on one lane; "ProfilerStep#N" is skipped so the steps' ops show), on the host's compute stream. Each
// span is an OpBegin / OpEnd pair with a unique op id and the op's name as text (plan-less: the store keeps it). A
// compute kernel's text starts with the phase the host was in when it launched it (its cuda_runtime / cuda_driver
// event of the same "correlation"): "backward · " inside an autograd node, "optimizer step · " inside
// Optimizer.step, "forward · " inside any other op but zero_grad, so the window colours it (trace/store/span_kind.h).
// Steps and phases: step k ends with the k-th Optimizer.step annotation (its begin is the step's before_step phase,
// its end after_step, the first autograd node after the previous step its forward phase, on every rank at the
// host's time); a kernel counts in the step of its launch; what comes after the last Optimizer.step, or every span
// of a trace without one, is in no step (0). Several optimizers stepping in one training step count as several.
// Memory: each [memory] event (profile_memory=True) is an Alloc (Bytes > 0, named by the innermost op around it) or
// Free (Bytes < 0) of its device,
// allocated_after the running sum from what was allocated before the first event ("Total Allocated" − "Bytes" of
// the first, one Alloc at its time), reserved_after its "Total Reserved". Frees find their allocation by "Addr".
// Categories where the trace tells them, from the ops around the event on its thread (PyTorch wraps
// Optimizer.step / zero_grad in record_function "Optimizer.step#Adam.step" / "Optimizer.zero_grad#...", and
// autograd's nodes in "autograd::engine::evaluate_function: ..."):
//   optimizer_state  made inside Optimizer.step and alive after it; freed inside: temporaries
//   gradients        made inside backward and freed inside Optimizer.zero_grad, alive when the next
//                    Optimizer.step starts, or never freed
//   activations      made outside backward and freed inside it (what autograd kept)
//   temporaries      the rest
// Legacy traces (a JSON array of "X" events: PyTorch built without Kineto, e.g. Debian's 1.13) have no [memory]
// events; their ops import and a note says so. Untrusted input: JSON nested past kMaxJsonDepth, a time or byte
// count past the trace limits, or a file that is not a trace throw ImportError.
#pragma once
#include <string>

#include "trace/import/imported_run.h"

namespace shardscope {

// `json` is the file's text (gunzipped); `source` names it in errors and gives the run its name.
ImportedRun import_profiler_trace(const std::string& json, const std::string& source);

}  // namespace shardscope
