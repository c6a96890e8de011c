// Which backend executes a run, the accounting that predicts what its allocator measures and, for the CUDA backend,
// how the processes of a multi-node run find each other. Plain settings (ExecutionOptions holds them); depends on
// scenario/ (AccountingMode) only.
#pragma once
#include "exec/exec_layer.h"
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "scenario/scenario.h"

namespace shardscope::exec {

enum class BackendKind { Cpu, Cuda };

inline std::string backend_kind_name(BackendKind kind) { return kind == BackendKind::Cuda ? "cuda" : "cpu"; }
inline std::optional<BackendKind> backend_kind_from_name(std::string_view name) {
  if (name == "cpu") return BackendKind::Cpu;
  if (name == "cuda") return BackendKind::Cuda;
  return std::nullopt;
}

// The accounting rules a backend's allocator counts by, so a prediction beside a measurement uses the same rules:
// host memory counts exact bytes; the CUDA allocator (exec/cuda_host/device_caching_allocator.h) counts PyTorch 2.x
// caching-allocator blocks.
inline AccountingMode accounting_mode_of(BackendKind kind) {
  return kind == BackendKind::Cuda ? AccountingMode::PyTorch2 : AccountingMode::Exact;
}

// One process per node (CUDA backend only): --nnodes, --node-rank, --master HOST:PORT, --token. Node 0 is the
// master: it listens on HOST:PORT and hands the NCCL unique ids to the nodes that hold the job token
// (exec/cuda_host/tcp_rendezvous.h).
struct MultiNodeOptions {
  int nnodes = 1;
  int node_rank = 0;
  std::string master;  // "HOST:PORT"; needed when nnodes > 1
  std::string token;   // the job token (--token or SHARDSCOPE_TOKEN), the same on every node; needed when nnodes > 1
  std::chrono::milliseconds join_timeout{60'000};
};

}  // namespace shardscope::exec
