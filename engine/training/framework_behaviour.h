// Which PyTorch version's behaviour a lowering follows. Chosen by the accounting mode: `pytorch-1.8` follows
// 1.8/1.9; `pytorch-2` and `exact` follow current 2.x (exact only drops the allocator's rounding). On the "CPU"
// device (exact only) what is CUDA's goes: no cuBLAS / cuBLASLt workspaces, no CUDA reduction scratch, optimizers
// step per parameter (foreach defaults to CUDA tensors only), Adam's step counters live on the device.
#pragma once
#include <optional>
#include <string>

#include "cluster/device_preset.h"
#include "core/units.h"
#include "plan/program_builder.h"
#include "scenario/scenario.h"

namespace shardscope {

struct FrameworkBehaviour {
  std::string name;  // "PyTorch 1.8/1.9", "PyTorch 2.x"
  // torch/optim/optimizer.py: zero_grad(set_to_none=True) is the default from 2.0 (PR #92731);
  // 1.x zeroes .grad in place, so gradients stay allocated between steps.
  bool zero_grad_sets_none = true;
  // torch/nn/parallel/distributed.py _ddp_init_helper: with find_unused_parameters=False the first
  // iteration uses one bucket (bucket_size_limits = [sys.maxsize], PR #72843, from 1.12); 1.8 uses
  // [1 MiB first bucket, bucket_cap_mb]. Both rebuild buckets at the start of the second forward.
  bool ddp_single_first_bucket = true;
  // torch/nn/parallel/distributed.py (2.x): __init__ sets bucket_bytes_cap_default only when bucket_cap_mb is None,
  // and _ddp_init_helper hands the Reducer first_bucket_bytes_cap = dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB) only
  // then, else bucket_bytes_cap itself; Reducer::rebuild_buckets (reducer.cpp) assigns the rebuilt buckets with
  // [first_bucket_bytes_cap_, bucket_bytes_cap_]. So an explicit bucket_cap_mb (25 included) is also the first
  // rebuilt bucket's limit. 1.x's rebuild_buckets always starts with kDefaultFirstBucketBytes.
  bool ddp_explicit_cap_limits_first_rebuilt_bucket = true;
  // ProcessGroupGloo (2.x, initializeStreamsEvents) record_streams the tensors it works on onto a side stream, so
  // the flat tensor of _sync_module_states' broadcast_coalesced goes back to the cache only when gloo's copy back
  // from pinned host memory has run (memory/late_frees.h): measured on 2.11 (H200, gloo, 2-3 ranks sharing the GPU,
  // tests/data/h200-torch-2.11/sweep/*.history.json.gz), the Reducer's bucket allocated right after the broadcast
  // cannot reuse the flat's block and opens a segment of its own. Whether the copy is still running then is a race
  // between the copy (bytes / host-to-device bandwidth) and a nearly constant CPU gap: flats from this size on
  // lost it in 36 of 42 measured rank-runs, smaller ones never did (a measured timing threshold, not a PyTorch
  // constant). NCCL stashes its tensors instead and frees them on work.wait(): no late free. unset: not modelled
  // (1.8, where ProcessGroupGloo did not record_stream; not measured).
  std::optional<Bytes> gloo_late_flat_free_min_bytes;
  // torch/optim/adam.py: foreach is the default on CUDA in 2.x (_default_to_fused_or_foreach, fused off);
  // 1.8 runs the per-parameter loop of torch/optim/_functional.py.
  bool optimizer_foreach = true;
  // aten/src/ATen/cuda/CublasHandlePool.cpp: from 2.0 the cuBLAS workspace comes from the caching allocator,
  // cached per (handle, stream): 4096*1024*2 + 16*1024*8 = 8,519,680 B, or 32 MiB on sm90 (PR #89027).
  // 1.x lets cuBLAS allocate it outside the allocator (0 here).
  Bytes cublas_workspace_bytes = 0;
  // Whether threads other than autograd's (forward's main thread, DataParallel's parallel_apply workers) keep one
  // too: setWorkspaceForHandle runs on every getCurrentCUDABlasHandle(), and the cuBLASLt path of addmm takes its
  // handle from there (accounting.cublas_workspaces). Measured on PyTorch 2.11.0+cu130, H200, 2026-11-26
  // (tests/gpu/cublas_workspace.py): the main thread, the autograd thread and any other thread that runs a GEMM
  // each hold one 32 MiB workspace.
  bool forward_threads_hold_workspace = true;
  // A biased Linear forward is addmm(bias, x, W.t()), which takes the cuBLASLt path (gemm_and_bias in
  // aten/src/ATen/cuda/CUDABlas.cpp), whose workspace (CUBLASLT_WORKSPACE_SIZE, default 1024 KiB) current 2.x
  // caches per handle and stream like the cuBLAS one: measured on 2.11 (tests/gpu/pytorch_reference.py --history),
  // the main thread's first biased Linear forward allocates 1 MiB right after the cuBLAS workspace and it stays
  // allocated, at batch 1 too (the 2.9/2.10 isInputCompliesAddmmCudaLt asked for more than one row; 2.11+cu130's
  // histories at batch 1 all hold it); backward's GEMMs (mm, no bias) take none. 1.x: 0 (cuBLASLt allocates
  // outside the allocator).
  Bytes cublaslt_workspace_bytes = 0;
  // F.mse_loss(reduction="mean") on CUDA, measured on 2.11: an input-sized result buffer first, then the
  // input-sized elementwise loss (freed on return, with the reduction's scratch); the returned loss is the result
  // buffer resized to one element (mse_loss_out's mean_out into it), so as long as the loss lives it keeps all of it.
  // 1.x: the elementwise loss, then loss.mean() as a fresh scalar.
  bool mse_loss_keeps_input_sized_result = true;
  // The device's multiprocessors and threads per multiprocessor, which size the scratch of ATen's CUDA reductions
  // (training/reduction_scratch.h): a Linear's bias gradient, mse_loss's mean. 0 (1.x profile): not modelled.
  int reduction_multiprocessors = 0;
  int reduction_max_threads_per_multiprocessor = 0;
  // aten/src/ATen/native/cuda/Shape.cu, 1.8: a CUDA cat of more than one input (parallel_cat: flatten_dense_tensors
  // in broadcast_coalesced and reduce_add_coalesced) first allocates a device buffer for the inputs' metadata,
  // CAT_ARRAY_BATCH_SIZE (128) × sizeof(CatArrInputTensor<T, unsigned>) (a pointer and three 32-bit values, padded
  // to 24 B) = 3,072 B, through the caching allocator, freed when the cat returns. Later versions pass the metadata
  // as kernel arguments (CatArrInputTensorMetadata), so 2.x allocates nothing.
  Bytes cat_metadata_bytes = 0;
  // torch/distributed/optim/zero_redundancy_optimizer.py: parameters sorted by size (descending) before the
  // greedy partition from 1.10; 1.8/1.9 take them in registration order.
  bool zero_partition_sorted_by_size = true;
  // Adam / AdamW's state['step'] on the parameters' device, per parameter: from 1.12 (torch/optim/adam.py, 1.13's
  // Adam.step and 2.x _init_group) it is torch.tensor(0.) — a float32 0-d tensor on the CPU — unless capturable or
  // fused, so it costs the GPU nothing and a CPU run 4 bytes per parameter; 1.8 keeps a Python int.
  Bytes optimizer_step_tensor_bytes = 0;
  // torch/autograd/profiler.py (1.x) record_function, which Optimizer.step's profile_hook_step wraps every step in:
  // __init__ sets handle = torch.zeros(1) (4 B), __enter__ replaces it by torch.ops.profiler._record_function_enter's
  // uint8 tensor of sizeof(at::RecordFunction) (1.13, x86-64: 288 B), dropped when the step returns. 2.x's
  // _record_function_enter_new returns a ScriptObject (no tensor). A host tensor: counted on the CPU device only
  // (AccountingSettings::record_function_bytes says how large). zero_grad's own wrapper is transient between phases
  // and not modelled.
  Bytes record_function_handle_bytes = 0;
};

FrameworkBehaviour framework_behaviour(const AccountingSettings& accounting, const std::string& gpu_arch,
                                       const DevicePreset& device);

// The record_function handle around an optimizer step (record_function_handle_bytes; nothing when 0): returns
// the handle to pass to exit_record_function after the step, or -1.
TensorId enter_record_function(ProgramBuilder& builder, const FrameworkBehaviour& behaviour, const std::string& what);
void exit_record_function(ProgramBuilder& builder, TensorId handle);

// torch.cat's own allocations besides its output when it flattens `inputs` tensors (FrameworkBehaviour::
// cat_metadata_bytes): allocated and freed right after the output, which the caller has just allocated.
void lower_cat_scratch(ProgramBuilder& builder, const FrameworkBehaviour& behaviour, std::size_t inputs,
                       const std::string& what);

}  // namespace shardscope
