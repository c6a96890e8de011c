// The tensors a plan allocates for PyTorch 2.x's cached cuBLAS workspaces (one per framework thread that runs a
// GEMM: "main" for forward, "autograd" for backward; training/model_pass.h), named so the executor can find them
// and hand them to cuBLAS (RankBackend::use_gemm_workspace): the workspace cuBLAS works in is then the memory the
// allocator counts, as in PyTorch (aten/src/ATen/cuda/CublasHandlePool.cpp sets a caching-allocator buffer with
// cublasSetWorkspace).
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace shardscope {

// The framework threads whose GEMMs PyTorch runs on handles (and workspaces) of their own: forward on the main
// thread, backward on the autograd engine's (DataParallel's replicas run forward on "parallel_apply worker").
inline constexpr std::string_view kForwardGemmThread = "main";
inline constexpr std::string_view kBackwardGemmThread = "autograd";

inline constexpr std::string_view kCublasWorkspacePrefix = "cuBLAS workspace (";
inline constexpr std::string_view kCublasWorkspaceSuffix = " thread)";

inline std::string cublas_workspace_tensor_name(std::string_view thread) {
  return std::string(kCublasWorkspacePrefix) + std::string(thread) + std::string(kCublasWorkspaceSuffix);
}

// The cuBLASLt workspace a thread keeps once it runs a biased Linear forward (training/framework_behaviour.h); the
// executor's GEMMs never use it.
inline constexpr std::string_view kCublasLtWorkspacePrefix = "cuBLASLt workspace (";

inline std::string cublaslt_workspace_tensor_name(std::string_view thread) {
  return std::string(kCublasLtWorkspacePrefix) + std::string(thread) + std::string(kCublasWorkspaceSuffix);
}

// Either library's workspace: scratch that no kernel reads as values, so neither PyTorch nor the executor fills it
// (exec/rank_runner.cpp run_alloc), and the simulator charges its allocation no fill.
inline bool is_gemm_workspace(std::string_view tensor_name) {
  return (tensor_name.starts_with(kCublasWorkspacePrefix) || tensor_name.starts_with(kCublasLtWorkspacePrefix)) &&
         tensor_name.ends_with(kCublasWorkspaceSuffix);
}

// The thread whose workspace a tensor is ("main", "autograd"), or nothing for any other tensor.
inline std::optional<std::string> cublas_workspace_thread(std::string_view tensor_name) {
  if (tensor_name.size() <= kCublasWorkspacePrefix.size() + kCublasWorkspaceSuffix.size() ||
      tensor_name.substr(0, kCublasWorkspacePrefix.size()) != kCublasWorkspacePrefix ||
      tensor_name.substr(tensor_name.size() - kCublasWorkspaceSuffix.size()) != kCublasWorkspaceSuffix)
    return std::nullopt;
  return std::string(tensor_name.substr(kCublasWorkspacePrefix.size(),
                                        tensor_name.size() - kCublasWorkspacePrefix.size() - kCublasWorkspaceSuffix.size()));
}

}  // namespace shardscope
