// Where this process stands in a multi-process CUDA run, from the flags or, when none is given, from the torchrun
// or SLURM environment (exec/cuda_host/launch_environment.h); and `shardscope-cli launch-check`, which joins the
// other processes through the master exactly as `run --backend cuda` does before NCCL starts, so a launch (hosts,
// ports, token, GPU pinning) is proven on CPUs before GPU time is spent.
#pragma once
#include <iosfwd>
#include <optional>
#include <string>

#include "exec/backend_choice.h"
#include "exec/cuda_host/launch_environment.h"

namespace shardscope::cli {

// Fills --nnodes, --node-rank and --master from the launcher's environment when none of them was given, pins this
// process to its GPU (CUDA_VISIBLE_DEVICES, before CUDA starts) when several share a machine, and checks the
// result (ScenarioError naming the flag or variable). Returns the place the environment gave, if it did.
std::optional<exec::LaunchPlace> resolve_launch(exec::MultiNodeOptions& multinode, bool flags_given);

// For a backend that runs every rank in one process (cpu): ScenarioError when torchrun or SLURM started several
// processes of it, each of which would run the whole job.
void refuse_multi_process_launch(const std::string& backend);

// launch-check: prints where this process stands and joins the others (text or JSON). Returns the exit code: 0
// when every process joined, 3 when the join failed (message on err).
int check_launch(const exec::MultiNodeOptions& multinode, const std::optional<exec::LaunchPlace>& place, bool json,
                 std::ostream& out, std::ostream& err);

}  // namespace shardscope::cli
