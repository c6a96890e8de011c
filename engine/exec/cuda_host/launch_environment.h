// How a multi-process CUDA run learns its place when no --nnodes / --node-rank / --master is given: from the
// environment the launchers users already have set, torchrun's (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE) or SLURM's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the first host of
// SLURM_JOB_NODELIST). A ShardScope "node" is one process of the run (MultiNodeOptions): with one process per GPU
// (torchrun --nproc-per-node 8, srun --ntasks-per-node 8) each process is pinned to its own GPU through
// CUDA_VISIBLE_DEVICES before CUDA starts, so every process drives one GPU and NCCL numbers ranks as usual.
// Pure logic over a variable lookup, so the rules are unit-tested without launchers, sockets or GPUs.
#pragma once
#include "exec/exec_layer.h"
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace shardscope::exec {

// A launcher variable that is present but wrong ("RANK=3 is not below WORLD_SIZE=2"): the message names it.
class LaunchEnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Returns a variable's value, or nothing when it is unset.
using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view)>;
EnvironmentLookup process_environment();  // getenv

struct LaunchPlace {
  std::string source;        // "torchrun" or "slurm": which variables were read (named in messages and reports)
  int processes = 1;         // processes in the run (ShardScope's --nnodes)
  int process_rank = 0;      // this one's index, 0 = the master (--node-rank)
  int local_rank = 0;        // among the processes on this machine
  int local_processes = 1;   // processes on this machine
  std::string master;        // "HOST:PORT" where process 0 listens (--master)
  std::string port_note;     // why the port is what it is, when it is not MASTER_PORT as given (else empty)
};

// The port torchrun's static and c10d launches leave to the workers: its agent on the master host already holds
// MASTER_PORT for its own TCPStore when it sets TORCHELASTIC_USE_AGENT_STORE=True (torch/distributed/elastic/agent/
// server/local_elastic_agent.py, 1.13 and 2.x), so ShardScope's rendezvous takes the next port there.
inline constexpr int kDefaultMasterPort = 29500;  // torch.distributed's default, for SLURM without MASTER_PORT

// The place the environment gives, or nothing when neither launcher's variables are set (a single process).
// torchrun's variables win when both are present (srun torchrun … sets both; torchrun's describe the workers).
std::optional<LaunchPlace> launch_place_from_environment(const EnvironmentLookup& env);

// The first host of a SLURM hostlist: "gpu[07-09,11],cpu01" → "gpu07"; "rack[1-2]-n[01-04]" → "rack1-n01".
std::string first_slurm_host(std::string_view nodelist);

// This machine's process count from SLURM_TASKS_PER_NODE ("2(x3),1") for node index node_id: 2 for nodes 0..2, 1
// for node 3.
int slurm_tasks_on_node(std::string_view tasks_per_node, int node_id);

// What CUDA_VISIBLE_DEVICES must become so this process sees only its own GPU, or nothing to change: nothing with
// one process per machine, or when the launcher already left one device visible (srun --gpus-per-task 1);
// LOCAL_RANK when unset; the LOCAL_RANK-th entry of a longer list. Throws when the list is shorter than the
// processes on the machine.
std::optional<std::string> pinned_visible_devices(const LaunchPlace& place, const std::optional<std::string>& visible);

}  // namespace shardscope::exec
