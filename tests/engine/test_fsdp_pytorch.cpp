// fsdp's pytorch-2 prediction against what PyTorch 2.11's FSDP2 (fully_shard) allocated on an H200: every phase of
// every rank of the recorded jobs (tests/data/h200-torch-2.11/fsdp2/, made by tests/gpu/pytorch_truth.py's fsdp2
// part, and the two jobs of shared/pytorch-2.11-h200/artifacts-report.json copied beside them), memory_allocated,
// max_memory_allocated and memory_reserved. The expectations are PyTorch's measurements; the only figures not
// required equal are the 11 where gloo's worker thread, not PyTorch's main thread, dropped the last reference to a
// collective's tensor (a late free nobody can order deterministically; notes/issue38-fsdp2.md finding 2): each is
// listed below with the block it held, and must differ by exactly that; and 4 at world 1 under a bf16 param_dtype's
// first forward, not modelled yet (kWorld1Bf16FirstForward), which must differ by exactly what was measured.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "run_helpers.h"

namespace shardscope {
namespace {

using testing::run;
namespace fs = std::filesystem;

const fs::path kData = fs::path(SHARDSCOPE_SOURCE_DIR) / "tests/data/h200-torch-2.11/fsdp2";

struct Figures {
  std::string phase;
  int step = 0;
  Bytes allocated = 0, max_allocated = 0, reserved = 0;
};

struct Job {
  std::string name;
  int layers = 0, width = 0, batch = 0, steps = 0, world = 0;
  std::string units, reshard_after_forward, backend;
  std::map<int, std::vector<Figures>> ranks;  // rank -> phases
  std::optional<Dtype> param_dtype, reduce_dtype;  // MixedPrecisionPolicy; unset: None
};

// The scenario the job ran: L × Linear(D) + ReLU, MSE, Adam, D-wide batch per rank, on the H200 profile, with the
// arguments the script passed (it passes reshard_after_forward explicitly; the artifacts job leaves it to None).
Scenario scenario_of(const Job& job) {
  Scenario s;
  s.model.spec = "mlp:" + std::to_string(job.layers) + "x" + std::to_string(job.width) + ":relu";
  s.strategy.kind = StrategyKind::Fsdp;
  s.cluster.world = job.world;
  s.cluster.device = "H200-141";
  s.training.batch = job.batch;
  s.training.steps = job.steps;
  s.training.optimizer = OptimizerKind::Adam;
  s.accounting.mode = AccountingMode::PyTorch2;
  s.strategy.fsdp_units = *parse_fsdp_units(job.units);
  s.strategy.reshard_after_forward = job.reshard_after_forward;
  s.strategy.process_group = *parse_process_group(job.backend);
  s.strategy.fsdp_param_dtype = job.param_dtype;
  s.strategy.fsdp_reduce_dtype = job.reduce_dtype;
  return s;
}

std::vector<Job> sweep_jobs() {
  std::map<std::string, Job> jobs;
  for (const auto& entry : fs::directory_iterator(kData)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("fsdp2-", 0) != 0 || entry.path().extension() != ".json" || file.find(".history") != std::string::npos) continue;
    std::ifstream in(entry.path());
    const auto d = nlohmann::json::parse(in);
    if (!d.at("ok").get<bool>()) continue;
    const auto& spec = d.at("spec");
    Job& job = jobs[spec.at("name").get<std::string>()];
    job.name = spec.at("name").get<std::string>();
    job.layers = spec.at("layers").get<int>();
    job.width = spec.at("width").get<int>();
    job.batch = spec.at("batch").get<int>();
    job.steps = spec.at("steps").get<int>();
    job.world = spec.at("world").get<int>();
    job.units = spec.at("units").get<std::string>();
    job.reshard_after_forward = spec.at("reshard_after_forward").get<bool>() ? "true" : "false";
    job.backend = spec.at("backend").get<std::string>();
    if (spec.contains("param_dtype")) job.param_dtype = parse_dtype(spec.at("param_dtype").get<std::string>());
    if (spec.contains("reduce_dtype")) job.reduce_dtype = parse_dtype(spec.at("reduce_dtype").get<std::string>());
    auto& phases = job.ranks[d.at("rank").get<int>()];
    for (const auto& p : d.at("phases"))
      phases.push_back({p.at("phase").get<std::string>(), p.at("step").get<int>(), p.at("allocated").get<Bytes>(),
                        p.at("max_allocated").get<Bytes>(), p.at("reserved").get<Bytes>()});
  }
  std::vector<Job> list;
  for (auto& [name, job] : jobs) list.push_back(std::move(job));
  return list;
}

std::vector<Job> artifacts_jobs() {
  std::ifstream in(kData / "artifacts-report-fsdp2.json");
  const auto d = nlohmann::json::parse(in);
  std::vector<Job> list;
  for (const auto& [key, world, backend] : {std::tuple{"fsdp2_w1_nccl", 1, "nccl"}, std::tuple{"fsdp2_w2_gloo", 2, "gloo"}}) {
    Job job{key, 6, 2048, 32, 2, world, "layer", "", backend, {}, {}, {}};
    for (const auto& p : d.at(key).at("phases"))
      job.ranks[0].push_back({p.at("name").get<std::string>(), p.at("step").get<int>(), p.at("allocated_bytes").get<Bytes>(),
                              p.at("max_allocated_bytes").get<Bytes>(), p.at("reserved_bytes").get<Bytes>()});
    list.push_back(job);
  }
  return list;
}

// gloo's late frees (measured − predicted, bytes): a reduce-scatter input clone's 7,901,696 B block still held when
// the next step's maximum was taken, which also made the allocator cudaMalloc one more 18 MiB segment; and one
// forward all-gather output (16 MiB block) alive at `forward`.
using Key = std::tuple<std::string, int, std::string, int, std::string>;  // job, rank, phase, step, counter
const std::map<Key, Bytes> kGlooLateFrees = {
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 0, "before_step", 2, "max_allocated"}, 7'901'696},
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 0, "after_step", 2, "max_allocated"}, 7'901'696},
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 0, "before_step", 2, "reserved"}, 18'874'368},
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 0, "after_step", 2, "reserved"}, 18'874'368},
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 1, "before_step", 1, "max_allocated"}, 7'901'696},
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 1, "before_step", 1, "reserved"}, 18'874'368},
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 1, "after_step", 1, "reserved"}, 18'874'368},
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 1, "forward", 2, "reserved"}, 18'874'368},
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 1, "before_step", 2, "reserved"}, 18'874'368},
    {{"fsdp2-w2-layer-reshard1-fp32-none-6x2048", 1, "after_step", 2, "reserved"}, 18'874'368},
    {{"fsdp2-w3-model-reshard1-fp32-none-4x1000", 2, "forward", 2, "allocated"}, 16'777'216},
};

// Not modelled yet (second H200 lease): at world 1 under a bf16 param_dtype, the first forward peaks higher than our
// plan by about one bf16 weight (8 MiB less an activation or three): a transient of world 1's unshard (which skips the
// all-gather and copies each parameter into its bf16 storage) that the plan lacks; with reshard_after_forward=False it
// also takes one more 20 MiB segment, reused by the backward. World 2's bf16 jobs and every later phase are equal.
const std::map<Key, Bytes> kWorld1Bf16FirstForward = {
    {{"fsdp2-w1-layer-reshard1-bf16-fp32-6x2048", 0, "forward", 1, "max_allocated"}, 8'257'536},
    {{"fsdp2-w1-layer-reshard1-bf16-bf16-6x2048", 0, "forward", 1, "max_allocated"}, 8'257'536},
    {{"fsdp2-w1-layer-reshard0-bf16-none-6x2048", 0, "forward", 1, "max_allocated"}, 7'995'392},
    {{"fsdp2-w1-layer-reshard0-bf16-none-6x2048", 0, "forward", 1, "reserved"}, 20'971'520},
};

// Holds every figure of `job` and returns how many it compared; the late frees above must differ by their block.
int hold(const Job& job) {
  const auto r = run(scenario_of(job));
  int compared = 0;
  for (const auto& [rank, phases] : job.ranks) {
    for (const Figures& measured : phases) {
      const PhaseMemory& predicted = r.phase(rank, measured.phase, measured.step);
      const std::pair<const char*, std::pair<Bytes, Bytes>> counters[] = {
          {"allocated", {measured.allocated, predicted.allocated}},
          {"max_allocated", {measured.max_allocated, predicted.max_allocated}},
          {"reserved", {measured.reserved, predicted.reserved}}};
      for (const auto& [counter, values] : counters) {
        const Key key{job.name, rank, measured.phase, measured.step, counter};
        const auto late = kGlooLateFrees.find(key);
        const auto unmodelled = kWorld1Bf16FirstForward.find(key);
        const Bytes expected_difference = late != kGlooLateFrees.end()                 ? late->second
                                          : unmodelled != kWorld1Bf16FirstForward.end() ? unmodelled->second
                                                                                        : 0;
        EXPECT_EQ(values.first - values.second, expected_difference)
            << job.name << " rank " << rank << " " << measured.phase << " " << measured.step << " " << counter
            << ": measured " << values.first << ", predicted " << values.second;
        ++compared;
      }
    }
  }
  return compared;
}

// The bar: the artifacts report's two jobs (world 1 over NCCL, world 2 over gloo sharing the GPU), all three
// counters at every phase, equal.
TEST(FsdpAgainstPytorch211, ArtifactsReportJobsEqualAtEveryPhase) {
  const auto jobs = artifacts_jobs();
  ASSERT_EQ(jobs.size(), 2u);
  for (const Job& job : jobs) EXPECT_EQ(hold(job), 8 * 3) << job.name;
}

// The sweep: 15 jobs, 27 rank files (units layer / model, reshard_after_forward true / false, world 1 NCCL, 2 and 3
// over gloo; world 3 with width 1000, not divisible by 3: padded shards and rank-dependent Adam state; six jobs under
// MixedPrecisionPolicy(param_dtype=bf16) with reduce_dtype fp32, bf16 or None, measured in the second lease).
TEST(FsdpAgainstPytorch211, SweepEqualsPytorchButForGlooLateFrees) {
  const auto jobs = sweep_jobs();
  ASSERT_EQ(jobs.size(), 15u);
  int compared = 0, rank_files = 0;
  for (const Job& job : jobs) {
    compared += hold(job);
    rank_files += static_cast<int>(job.ranks.size());
  }
  EXPECT_EQ(rank_files, 27);
  EXPECT_EQ(compared, 27 * 8 * 3);
}

// The per-stream pools are what make these figures: with one pool (every tensor on stream 0, as the allocator model
// was before) FSDP2's reserved bytes at world 2 come out wrong. rank 0 of the artifacts gloo job, `before_step` 1.
TEST(FsdpAgainstPytorch211, OnePoolWouldMissReserved) {
  const Job job = artifacts_jobs().at(1);
  auto r = run(scenario_of(job));
  for (auto& program : r.plan.programs)
    for (auto& tensor : program.tensors) tensor.alloc_stream = 0;
  const MemoryReport one_pool = account_memory(r.plan, AccountingMode::PyTorch2, r.scenario.device.capacity);
  const Figures& measured = job.ranks.at(0).at(3);
  ASSERT_EQ(measured.phase, "before_step");
  EXPECT_EQ(r.phase(0, "before_step", 1).reserved, measured.reserved);
  Bytes one_pool_reserved = 0;
  for (const auto& p : one_pool.ranks[0].phases)
    if (p.name == "before_step" && p.step == 1) one_pool_reserved = p.reserved;
  EXPECT_NE(one_pool_reserved, measured.reserved);
}

}  // namespace
}  // namespace shardscope
