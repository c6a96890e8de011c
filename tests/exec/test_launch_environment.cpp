// The launch environment rules (torchrun, SLURM, GPU pinning): each expectation is the launcher's documented
// variable meaning written out by hand, on a fake environment.
#include <gtest/gtest.h>

#include <map>

#include "exec/cuda_host/launch_environment.h"

namespace shardscope::exec {
namespace {

EnvironmentLookup fake(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    const auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(LaunchEnvironment, NoLauncherMeansOneProcess) {
  EXPECT_FALSE(launch_place_from_environment(fake({{"HOME", "/root"}})).has_value());
}

TEST(LaunchEnvironment, TorchrunGivesRankWorldAndMaster) {
  // torchrun --nnodes 2 --nproc-per-node 4 --rdzv-backend c10d: the second node's third worker.
  const auto place = launch_place_from_environment(fake({{"RANK", "6"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "2"},
                                                         {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.1"},
                                                         {"MASTER_PORT", "29400"}}));
  ASSERT_TRUE(place.has_value());
  EXPECT_EQ(place->source, "torchrun");
  EXPECT_EQ(place->processes, 8);
  EXPECT_EQ(place->process_rank, 6);
  EXPECT_EQ(place->local_rank, 2);
  EXPECT_EQ(place->local_processes, 4);
  EXPECT_EQ(place->master, "10.0.0.1:29400");
  EXPECT_TRUE(place->port_note.empty());
}

TEST(LaunchEnvironment, TorchrunsAgentStoreHoldsMasterPortSoTheNextOneIsUsed) {
  const auto place = launch_place_from_environment(fake({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "node0"},
                                                         {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}}));
  ASSERT_TRUE(place.has_value());
  EXPECT_EQ(place->master, "node0:29501");
  EXPECT_FALSE(place->port_note.empty());
}

TEST(LaunchEnvironment, Ipv6MasterAddressIsBracketed) {
  const auto place = launch_place_from_environment(
      fake({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "fd00::1"}, {"MASTER_PORT", "1234"}}));
  EXPECT_EQ(place->master, "[fd00::1]:1234");
}

TEST(LaunchEnvironment, TorchrunWinsOverSlurmWhenSrunStartsTorchrun) {
  const auto place = launch_place_from_environment(fake({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"SLURM_PROCID", "0"},
                                                         {"SLURM_NTASKS", "1"}, {"SLURM_JOB_NODELIST", "a"}}));
  EXPECT_EQ(place->source, "torchrun");
  EXPECT_EQ(place->process_rank, 3);
}

TEST(LaunchEnvironment, WrongTorchrunVariablesAreNamed) {
  const auto message = [](std::map<std::string, std::string> vars) {
    try {
      launch_place_from_environment(fake(std::move(vars)));
    } catch (const LaunchEnvironmentError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), "RANK=2 is not below WORLD_SIZE=2");
  EXPECT_EQ(message({{"RANK", "0"}}), "torchrun launch: WORLD_SIZE is not set");
  EXPECT_EQ(message({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), "RANK='x' is not a whole number from 0 to 65536");
  EXPECT_EQ(message({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
            "MASTER_PORT='70000' is not a whole number from 1 to 65535");
  EXPECT_EQ(message({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "4"}, {"LOCAL_WORLD_SIZE", "4"}}),
            "LOCAL_RANK=4 is not below LOCAL_WORLD_SIZE=4");
}

TEST(LaunchEnvironment, SlurmGivesProcidNtasksAndTheFirstHost) {
  // srun -N 2 --ntasks-per-node 2: the task with SLURM_PROCID 3 is the second task of the second node.
  const auto place = launch_place_from_environment(fake({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"},
                                                         {"SLURM_NODEID", "1"}, {"SLURM_TASKS_PER_NODE", "2(x2)"},
                                                         {"SLURM_JOB_NODELIST", "gpu[07-08]"}, {"MASTER_PORT", "29555"}}));
  ASSERT_TRUE(place.has_value());
  EXPECT_EQ(place->source, "slurm");
  EXPECT_EQ(place->processes, 4);
  EXPECT_EQ(place->process_rank, 3);
  EXPECT_EQ(place->local_rank, 1);
  EXPECT_EQ(place->local_processes, 2);
  EXPECT_EQ(place->master, "gpu07:29555");
}

TEST(LaunchEnvironment, SlurmWithoutMasterPortUsesTorchsDefault) {
  const auto place = launch_place_from_environment(
      fake({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n1,n2"}}));
  EXPECT_EQ(place->master, "n1:29500");
  EXPECT_FALSE(place->port_note.empty());
}

TEST(LaunchEnvironment, FirstHostOfASlurmHostlist) {
  EXPECT_EQ(first_slurm_host("node17"), "node17");
  EXPECT_EQ(first_slurm_host("gpu[07-09,11],cpu01"), "gpu07");
  EXPECT_EQ(first_slurm_host("gpu[11,07-09]"), "gpu11");  // Slurm keeps the order written
  EXPECT_EQ(first_slurm_host("rack[1-2]-n[01-04]"), "rack1-n01");
  EXPECT_EQ(first_slurm_host("a,b[1-3]"), "a");
}

TEST(LaunchEnvironment, SlurmTasksPerNodeIsReadForThisNode) {
  EXPECT_EQ(slurm_tasks_on_node("4", 0), 4);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 3), 1);
  EXPECT_THROW(slurm_tasks_on_node("2(x3),1", 4), LaunchEnvironmentError);
  EXPECT_THROW(slurm_tasks_on_node("2(x", 0), LaunchEnvironmentError);
  EXPECT_THROW(slurm_tasks_on_node("", 0), LaunchEnvironmentError);
}

TEST(LaunchEnvironment, OneProcessPerGpuIsPinnedToItsLocalRank) {
  LaunchPlace place;
  place.source = "torchrun";
  place.local_processes = 4;
  place.local_rank = 2;
  EXPECT_EQ(pinned_visible_devices(place, std::nullopt), "2");
  EXPECT_EQ(pinned_visible_devices(place, "4,5,6,7"), "6");
  EXPECT_EQ(pinned_visible_devices(place, "GPU-aa,GPU-bb,GPU-cc,GPU-dd"), "GPU-cc");
  EXPECT_EQ(pinned_visible_devices(place, "5"), std::nullopt);  // srun --gpus-per-task 1 pinned it already
  EXPECT_THROW(pinned_visible_devices(place, "0,1"), LaunchEnvironmentError);
  place.local_processes = 1;
  place.local_rank = 0;
  EXPECT_EQ(pinned_visible_devices(place, "0,1,2,3"), std::nullopt);  // one process drives every GPU of its node
}

}  // namespace
}  // namespace shardscope::exec
