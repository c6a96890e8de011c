// What the stack recorded with a memory snapshot's trace entry says about the allocation: the roles a category is
// recovered from, and a short name for it. torch.cuda.memory._record_memory_history (PyTorch 2.1+, context "all")
// keeps each entry's frames innermost first, Python frames (filename *.py) mixed with C++ frames (symbol names).
// The rules, each from where PyTorch 2.x makes such tensors:
//   workspace    a C++ frame of at::cuda::setWorkspaceForHandle / getCUDABlasLtWorkspace (aten/src/ATen/cuda/
//                CublasHandlePool.cpp: each thread's cuBLAS handle gets a workspace from the caching allocator on
//                its first GEMM and keeps it; the autograd engine's thread has its own)
//   reducer      a C++ frame in c10d::Reducer (DDP's buckets: Reducer::initialize_buckets, at construction and in
//                rebuild_buckets on the second iteration; torch/csrc/distributed/c10d/reducer.cpp)
//   collective   a Python frame under torch/distributed/ (broadcasts of _sync_module_states, the shape checks of
//                _verify_param_shape_across_processes) or a C++ frame in c10d:: other than the Reducer
//   optimizer    a Python frame under torch/optim/ (Optimizer.step, _init_group, the foreach kernels)
//   backward     a C++ frame in torch::autograd::Engine (the autograd engine's device threads have no Python frames),
//                or a Python frame of torch/autograd/__init__.py or torch/_tensor.py `backward`
//   parameters   a Python frame of torch/nn/modules/module.py `_apply` / `convert` / `to` / `cuda` / `to_empty`
//                (moving a model to the device), or a module's `__init__` / `reset_parameters` under torch/nn/
//   forward      a Python frame `forward` or `_call_impl` (inside a module call)
// memory_snapshot_import.cpp turns roles into categories with what happens to the block later (see there).
#pragma once
#include <cstdint>
#include <string>

#include "trace/import/pickle_reader.h"

namespace shardscope {

struct FrameRoles {
  bool has_python = false;  // any Python frame (an entry on the autograd engine's thread has none)
  bool workspace = false;   // a library's workspace (cuBLAS), kept by its handle for the process's life
  bool reducer = false;
  bool collective = false;
  bool optimizer = false;
  bool backward = false;
  bool parameters = false;
  bool forward = false;
};

// The roles of an entry's "frames" list (absent or not a list: no roles).
FrameRoles frame_roles(const std::optional<PickleRef>& frames);

// A short name for the allocation: the innermost Python frame ("forward (linear.py:134)"), then the script's own
// frame when another ("forward (linear.py:134) in train (train.py:42)"); without Python frames the autograd node
// from the C++ frames ("AddmmBackward0 (autograd)"), else the innermost ATen op ("aten::mm"); else "". A cuBLAS
// workspace is "cuBLAS workspace".
std::string frame_summary(const std::optional<PickleRef>& frames);

}  // namespace shardscope
