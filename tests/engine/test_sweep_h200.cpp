// Our pytorch-2 prediction against every job of PyTorch 2.11's randomised sweep on an H200
// (tests/data/h200-torch-2.11/sweep/, made by tests/gpu/pytorch_reference.py: single / DDP / ZeroRedundancyOptimizer
// on L × Linear(W)[+ReLU], gloo ranks sharing the GPU or NCCL at world 1): memory_allocated, max_memory_allocated
// and memory_reserved at every phase of every rank. The expectations are PyTorch's measurements.
//
// Most figures are deterministic and must equal ours. A few depend on timing races inside PyTorch, documented in
// issue 42's analysis and shown by the data itself (both outcomes on different ranks of one job, or in near-identical
// jobs), which no deterministic rule reproduces; for those a rank's figures may instead equal our model with the
// race's other outcome, built by moving or adding the ops the race moves:
// - X1 (NCCL): ProcessGroupNCCL (2.11) stashes an async collective's tensors in its Work's TensorShelf; DDP waits on
//   the Work's future, never work.wait(), so the shelf goes only once the watchdog (polling every 100 ms) has seen
//   the work complete and the main thread enqueues a later collective. The step-1 bucket dropped by the rebuild
//   then lives on until that collective or to the end: its free moves before any later collective, or away.
// - X2 (gloo): whether the broadcast flat's copy back (ProcessGroupGloo's record_stream; FrameworkBehaviour::
//   gloo_late_flat_free_min_bytes) is still running when the Reducer allocates its bucket is a race of the copy
//   against the CPU; the size threshold guesses it: the flat's late completion is flipped.
// - X3 (gloo): ProcessGroupGloo's worker thread holds the Work, and with it the flat, until after execute()
//   returns, so the main thread's wait() can return first; the flat is then freed on the worker a little later,
//   after the bucket allocation or even after the `wrapped` marker: the last flat's free moves there.
// - X4 (gloo): the same for the small index and shape tensors of _verify_param_shape_across_processes (DDP
//   __init__) and Reducer::sync_bucket_indices (the rebuild), which we do not model (512-B blocks, freed at once
//   on the main thread): a 512-B tensor alive through the construction (its peak), or through step 2's `forward`
//   marker.
// The test prints how many figures equal our prediction as it is, and which rank-runs needed which race outcome.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/run_helpers.h"

namespace shardscope {
namespace {

using json = nlohmann::json;
using Figures = std::array<Bytes, 3>;  // allocated, max_allocated, reserved
using PhaseKey = std::pair<int, std::string>;  // (step, phase)
constexpr const char* kCounters[3] = {"allocated", "max_allocated", "reserved"};

Scenario scenario_of(const json& job) {
  Scenario s;
  s.model.spec = "mlp:" + std::to_string(job.at("layers").get<int>()) + "x" + std::to_string(job.at("width").get<int>()) +
                 (job.at("relu").get<bool>() ? ":relu" : "");
  s.strategy.kind = *parse_strategy(job.at("strategy").get<std::string>());
  s.cluster.world = job.at("world").get<int>();
  s.cluster.device = "H200-141";
  s.training.batch = job.at("batch").get<int>();
  s.training.steps = job.at("steps").get<int>();
  s.training.optimizer = *parse_optimizer(job.at("optimizer").get<std::string>());
  s.training.loss = *parse_loss(job.at("loss").get<std::string>());
  s.accounting.mode = AccountingMode::PyTorch2;
  if (s.strategy.kind != StrategyKind::Single) {
    // pytorch_reference.py passes DDP's bucket_cap_mb only when the job names one (null: left out).
    if (!job.at("bucket_cap_mb").is_null()) s.strategy.bucket_cap_mb = job.at("bucket_cap_mb").get<double>();
    s.strategy.gradient_as_bucket_view = job.at("gradient_as_bucket_view").get<bool>();
    s.strategy.process_group = *parse_process_group(job.at("backend").get<std::string>());
  }
  return s;
}

std::map<PhaseKey, Figures> figures_of(const RankMemory& rank) {
  std::map<PhaseKey, Figures> out;
  for (const PhaseMemory& p : rank.phases) out[{p.step, p.name}] = {p.allocated, p.max_allocated, p.reserved};
  return out;
}

std::map<PhaseKey, Figures> torch_figures_of(const json& rank) {
  std::map<PhaseKey, Figures> out;
  for (const json& p : rank.at("phases"))
    out[{p.at("step").get<int>(), p.at("phase").get<std::string>()}] = {
        p.at("allocated").get<Bytes>(), p.at("max_allocated").get<Bytes>(), p.at("reserved").get<Bytes>()};
  return out;
}

// How many of torch's figures `ours` gets equal (PyTorch's single runs have no `wrapped` phase; ours is ignored).
int equal_figures(const std::map<PhaseKey, Figures>& torch, const std::map<PhaseKey, Figures>& ours) {
  int equal = 0;
  for (const auto& [key, t] : torch) {
    const auto found = ours.find(key);
    if (found == ours.end()) continue;
    for (int c = 0; c < 3; ++c) equal += t[static_cast<std::size_t>(c)] == found->second[static_cast<std::size_t>(c)];
  }
  return equal;
}

std::map<PhaseKey, Figures> account(const Program& program, Bytes capacity) {
  Plan plan;
  plan.programs.push_back(program);
  return figures_of(account_memory(plan, AccountingMode::PyTorch2, capacity, /*keep_series=*/false).ranks.at(0));
}

// --- editing a program into a race's other outcome (accounting reads only allocs, frees and phase markers) ---

bool named(const Program& p, const Op& op, const std::string& prefix) {
  return op.tensor >= 0 && p.tensors[static_cast<std::size_t>(op.tensor)].name.str().rfind(prefix, 0) == 0;
}

std::ptrdiff_t phase_index(const Program& p, const std::string& name, int step) {
  for (std::size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].kind == OpKind::Phase && p.ops[i].phase.str() == name && p.ops[i].step == step)
      return static_cast<std::ptrdiff_t>(i);
  return -1;
}

// Moves op `from` so that it comes right before the op now at `before` (before may be ops.size()).
void move_op(Program& p, std::size_t from, std::size_t before) {
  const Op op = p.ops[from];
  p.ops.erase(p.ops.begin() + static_cast<std::ptrdiff_t>(from));
  if (before > from) --before;
  p.ops.insert(p.ops.begin() + static_cast<std::ptrdiff_t>(before), op);
}

void insert_tensor(Program& p, const std::string& name, Bytes bytes, std::size_t alloc_before, std::size_t free_before) {
  const auto id = static_cast<TensorId>(p.tensors.size());
  TensorInfo tensor;
  tensor.name = name;
  tensor.bytes = bytes;
  tensor.element = ElementType::Opaque;
  p.tensors.push_back(tensor);
  Op alloc, free;
  alloc.kind = OpKind::Alloc;
  free.kind = OpKind::Free;
  alloc.tensor = free.tensor = id;
  p.ops.insert(p.ops.begin() + static_cast<std::ptrdiff_t>(free_before), free);
  p.ops.insert(p.ops.begin() + static_cast<std::ptrdiff_t>(alloc_before), alloc);
}

struct Variant {
  std::string name;
  Program program;
};

// gloo: X2 × X3 × X4 (the construction's and the rebuild's index tensors).
std::vector<Variant> gloo_variants(const Program& base) {
  std::vector<Variant> out;
  for (int x2 = 0; x2 < 2; ++x2)
    for (int x3 = 0; x3 < 3; ++x3)
      for (int x4 = 0; x4 < 4; ++x4) {
        if (x2 + x3 + x4 == 0) continue;  // the prediction itself
        Program p = base;
        std::string name;
        if (x2) {
          for (TensorInfo& t : p.tensors)
            if (t.name.str().rfind("broadcast_coalesced flat", 0) == 0) t.free_completes_late = !t.free_completes_late;
          name += " X2 (flat's free completes the other way)";
        }
        if (x3) {
          std::ptrdiff_t last_flat_free = -1, last_bucket_alloc = -1;
          for (std::size_t i = 0; i < p.ops.size() && p.ops[i].step == 0; ++i) {
            if (p.ops[i].kind == OpKind::Free && named(p, p.ops[i], "broadcast_coalesced flat")) last_flat_free = static_cast<std::ptrdiff_t>(i);
            if (p.ops[i].kind == OpKind::Alloc && named(p, p.ops[i], "DDP bucket")) last_bucket_alloc = static_cast<std::ptrdiff_t>(i);
          }
          if (last_flat_free < 0) continue;  // every broadcast bucket held one tensor: no flat
          if (x3 == 1) {
            move_op(p, static_cast<std::size_t>(last_flat_free), static_cast<std::size_t>(last_bucket_alloc) + 1);
            name += " X3 (last flat freed after the bucket allocation)";
          } else {
            const TensorId flat = p.ops[static_cast<std::size_t>(last_flat_free)].tensor;
            p.tensors[static_cast<std::size_t>(flat)].free_completes_late = false;  // requested and done before the next malloc
            move_op(p, static_cast<std::size_t>(last_flat_free), static_cast<std::size_t>(phase_index(p, "wrapped", 0)) + 1);
            name += " X3 (last flat freed after `wrapped`)";
          }
        }
        if (x4 & 1) {
          const auto created = static_cast<std::size_t>(phase_index(p, "model_created", 0));
          const auto wrapped = static_cast<std::size_t>(phase_index(p, "wrapped", 0));
          insert_tensor(p, "X4 construction index tensor", 512, created + 1, wrapped);
          name += " X4 (a 512-B tensor through the construction)";
        }
        if (x4 & 2) {
          std::ptrdiff_t rebuild = -1;  // the first free of a step-1 bucket: the rebuild
          for (std::size_t i = 0; i < p.ops.size() && rebuild < 0; ++i)
            if (p.ops[i].kind == OpKind::Free && p.ops[i].step == 2 && named(p, p.ops[i], "DDP bucket")) rebuild = static_cast<std::ptrdiff_t>(i);
          const std::ptrdiff_t forward = phase_index(p, "forward", 2);
          if (rebuild < 0 || forward < 0) continue;
          insert_tensor(p, "X4 rebuild index tensor", 512, static_cast<std::size_t>(rebuild), static_cast<std::size_t>(forward) + 1);
          name += " X4 (a 512-B tensor through step 2's `forward`)";
        }
        out.push_back({name, std::move(p)});
      }
  return out;
}

// NCCL: X1, the step-1 buckets' frees moved before the k-th later collective, or dropped.
std::vector<Variant> nccl_variants(const Program& base) {
  std::vector<Variant> out;
  std::vector<std::size_t> frees;
  std::vector<TensorId> step0_buckets;
  for (const Op& op : base.ops)
    if (op.kind == OpKind::Alloc && op.step == 0 && named(base, op, "DDP bucket")) step0_buckets.push_back(op.tensor);
  for (std::size_t i = 0; i < base.ops.size(); ++i)
    if (base.ops[i].kind == OpKind::Free &&
        std::find(step0_buckets.begin(), step0_buckets.end(), base.ops[i].tensor) != step0_buckets.end())
      frees.push_back(i);
  if (frees.empty()) return out;
  std::vector<std::size_t> collectives;
  for (std::size_t i = frees.back() + 1; i < base.ops.size(); ++i)
    if (base.ops[i].kind == OpKind::Collective) collectives.push_back(i);
  for (std::size_t k = 0; k <= collectives.size(); ++k) {
    Program p = base;
    std::vector<Op> moved;
    for (auto it = frees.rbegin(); it != frees.rend(); ++it) {
      moved.insert(moved.begin(), p.ops[*it]);
      p.ops.erase(p.ops.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    std::string name = " X1 (step-1 buckets kept to the end)";
    if (k < collectives.size()) {
      const std::size_t at = collectives[k] - frees.size();  // the frees all came before it
      p.ops.insert(p.ops.begin() + static_cast<std::ptrdiff_t>(at), moved.begin(), moved.end());
      name = " X1 (step-1 buckets freed at the " + std::to_string(k + 1) + ". collective after the rebuild)";
    }
    out.push_back({name, std::move(p)});
  }
  return out;
}

// The races a variant's name says it plays out ("X1" ... "X4").
std::set<std::string> races_of(const std::string& variant) {
  std::set<std::string> races;
  for (const char* race : {"X1", "X2", "X3", "X4"})
    if (variant.find(std::string(" ") + race + " ") != std::string::npos) races.insert(race);
  return races;
}

// The rank-runs issue 42's analysis (from the allocator histories and each rank's differences) found racing, and
// which races. Only these may take a race's other outcome: a rank-run that needs one elsewhere is a modelling error
// (dropping the gloo rule, for one, leaves 32 rank-runs unexplained). seed42-sweep-011 rank 0 shows X4 beside X3: its step-2 forward is 512 B above its
// step-3 forward, where the rest of X3's difference is the same.
const std::map<std::string, std::set<std::string>> kRacingRankRuns = {
    {"seed42-sweep-004 rank 0", {"X2"}}, {"seed42-sweep-004 rank 1", {"X2"}}, {"seed42-sweep-004 rank 2", {"X2"}},
    {"seed42-sweep-015 rank 0", {"X2"}}, {"seed42-sweep-022 rank 1", {"X2"}}, {"seed42-sweep-023 rank 1", {"X2"}},
    {"seed42-sweep-011 rank 0", {"X3", "X4"}}, {"seed42-sweep-018 rank 1", {"X3"}}, {"seed42-sweep-022 rank 0", {"X3"}},
    {"seed42-sweep-038 rank 0", {"X3"}}, {"seed42-sweep-038 rank 1", {"X3"}}, {"seed42-sweep-038 rank 2", {"X3"}},
    {"seed42-sweep-055 rank 0", {"X3"}}, {"seed42-sweep-055 rank 1", {"X3"}},
    {"seed42-sweep-006 rank 0", {"X4"}}, {"seed42-sweep-011 rank 1", {"X4"}}, {"seed42-sweep-018 rank 0", {"X4"}},
    {"seed42-sweep-026 rank 0", {"X4"}}, {"seed42-sweep-049 rank 1", {"X4"}}, {"seed42-sweep-050 rank 1", {"X4"}},
    {"seed42-sweep-053 rank 1", {"X4"}}, {"seed42-sweep-056 rank 1", {"X4"}}, {"seed7-sweep-006 rank 0", {"X4"}},
    {"seed42-sweep-028 rank 0", {"X1"}}, {"seed42-sweep-033 rank 0", {"X1"}}, {"seed42-sweep-034 rank 0", {"X1"}},
    {"seed42-sweep-048 rank 0", {"X1"}}, {"seed42-sweep-052 rank 0", {"X1"}}, {"seed7-sweep-015 rank 0", {"X1"}},
    {"seed7-sweep-018 rank 0", {"X1"}}, {"seed7-sweep-019 rank 0", {"X1"}}};

struct Count {
  int figures = 0, equal = 0, rank_runs = 0, rank_runs_equal = 0;
  std::array<int, 3> equal_by_counter{};
};

TEST(SweepH200, EveryFigureEqualsOursOrADocumentedRace) {
  const std::filesystem::path dir = std::filesystem::path(SHARDSCOPE_SOURCE_DIR) / "tests/data/h200-torch-2.11/sweep";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".json") && !name.ends_with(".history.json")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 84u) << "the sweep's 84 jobs";
  Count count;
  std::vector<std::string> races, unexplained;
  for (const auto& path : files) {
    std::ifstream in(path);
    const json truth = json::parse(in);
    const std::string label = path.stem().string();
    const json& job = truth.at("job");
    const testing::Run run = testing::run(scenario_of(job));
    const bool gloo = job.at("backend") == "gloo" && job.at("strategy") != "single";
    const bool nccl = job.at("backend") == "nccl" && job.at("strategy") != "single";
    for (const json& rank_truth : truth.at("ranks")) {
      const int rank = rank_truth.at("rank").get<int>();
      const auto torch = torch_figures_of(rank_truth);
      const auto ours = figures_of(run.report.ranks.at(static_cast<std::size_t>(rank)));
      const int figures = static_cast<int>(torch.size()) * 3;
      const int equal = equal_figures(torch, ours);
      count.figures += figures;
      count.equal += equal;
      ++count.rank_runs;
      for (const auto& [key, t] : torch)
        for (int c = 0; c < 3; ++c)
          count.equal_by_counter[static_cast<std::size_t>(c)] += ours.count(key) && ours.at(key)[static_cast<std::size_t>(c)] == t[static_cast<std::size_t>(c)];
      if (equal == figures) {
        ++count.rank_runs_equal;
        continue;
      }
      const Program& program = run.plan.programs.at(static_cast<std::size_t>(rank));
      const std::vector<Variant> variants = gloo ? gloo_variants(program) : nccl ? nccl_variants(program) : std::vector<Variant>{};
      const auto racing = kRacingRankRuns.find(label + " rank " + std::to_string(rank));
      std::string matched, nearest = "(none)";
      int nearest_equal = equal;
      for (const Variant& v : variants) {
        const std::set<std::string> races = races_of(v.name);
        if (racing == kRacingRankRuns.end() ||
            !std::includes(racing->second.begin(), racing->second.end(), races.begin(), races.end()))
          continue;
        const int e = equal_figures(torch, account(v.program, run.scenario.device.capacity));
        if (e == figures) {
          matched = v.name;
          break;
        }
        if (e > nearest_equal) nearest_equal = e, nearest = v.name;
      }
      const std::string where = label + " rank " + std::to_string(rank) + " (" + job.at("strategy").get<std::string>() + ", " +
                                job.at("backend").get<std::string>() + ", world " + std::to_string(job.at("world").get<int>()) + ")";
      if (!matched.empty()) {
        races.push_back(where + ":" + matched + "; " + std::to_string(figures - equal) + " figures");
        continue;
      }
      std::string detail;
      for (const auto& [key, t] : torch)
        for (int c = 0; c < 3; ++c)
          if (!ours.count(key) || ours.at(key)[static_cast<std::size_t>(c)] != t[static_cast<std::size_t>(c)])
            detail += "\n    step " + std::to_string(key.first) + " " + key.second + " " + kCounters[c] + ": ours " +
                      (ours.count(key) ? std::to_string(ours.at(key)[static_cast<std::size_t>(c)]) : "-") + ", torch " +
                      std::to_string(t[static_cast<std::size_t>(c)]);
      unexplained.push_back(where + ": " + std::to_string(figures - equal) + " figures differ" +
                            (racing == kRacingRankRuns.end() ? " (no race documented here)" : "") + "; nearest race outcome" + nearest +
                            " leaves " + std::to_string(figures - nearest_equal) + detail);
    }
  }
  std::printf("sweep: %d of %d figures equal our prediction (allocated %d, max_allocated %d, reserved %d of %d each); "
              "%d of %d rank-runs equal in every figure\n",
              count.equal, count.figures, count.equal_by_counter[0], count.equal_by_counter[1], count.equal_by_counter[2],
              count.figures / 3, count.rank_runs_equal, count.rank_runs);
  std::printf("rank-runs equal to a race's other outcome: %zu\n", races.size());
  for (const std::string& r : races) std::printf("  %s\n", r.c_str());
  for (const std::string& u : unexplained) ADD_FAILURE() << u;
}

}  // namespace
}  // namespace shardscope
