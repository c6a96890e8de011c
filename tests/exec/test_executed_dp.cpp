// torch.nn.DataParallel and BalancedDataParallel executed on CPU threads: device 0 loads the whole batch, scatters
// it (equal chunks, or BalancedDataParallel's smaller device-0 chunk and uneven rest), broadcasts the parameters into
// the replicas, gathers the outputs, takes the loss over the whole batch and sums the replicas' gradients back into
// device 0's .grad. So d devices × batch b must train exactly as one device on the same d·b samples (no averaging
// anywhere: the loss is already the mean over the gathered batch); only device 0 holds the model; every byte the
// executor allocated is what the exact accounting predicted.
#include "executed_run.h"

namespace shardscope::exec {
namespace {

using test::Executed;
using test::Variant;
using test::expect_measured_equals_predicted;
using test::expect_same_model;
Executed run(const Scenario& s) { return test::execute_scenario(s); }

// A DataParallel layout: devices, per-device batch (the scenario's training.batch: global = batch × devices) and,
// for balanced-dp, device 0's share. The chunk sizes are worked out by hand from data_parallel.cpp's rules.
struct Layout {
  const char* what;
  StrategyKind strategy;
  int devices;
  int batch;
  int gpu0_batch;  // balanced-dp only
  int global() const { return devices * batch; }
};

const Layout kLayouts[] = {
    {"dp 2 devices x 8 (chunks 8, 8)", StrategyKind::DataParallel, 2, 8, 0},
    {"dp 3 devices x 5 (chunks 5, 5, 5)", StrategyKind::DataParallel, 3, 5, 0},
    // unit = (15 - 2) / 2 = 6, one left over goes to device 1: chunks 2, 7, 6
    {"balanced-dp 3 devices, gpu0 2 (chunks 2, 7, 6)", StrategyKind::BalancedDataParallel, 3, 5, 2},
    // unit = (16 - 5) / 1 = 11: chunks 5, 11
    {"balanced-dp 2 devices, gpu0 5 (chunks 5, 11)", StrategyKind::BalancedDataParallel, 2, 8, 5},
    // gpu0 0: unit 12 / 2 = 6, chunks 0, 6, 6; device 0 only scatters, gathers, reduces (its replica's gradients are
    // materialised zeros) and steps
    {"balanced-dp 3 devices, gpu0 0 (chunks 0, 6, 6)", StrategyKind::BalancedDataParallel, 3, 4, 0},
    // gpu0 6 >= unit (18 - 6) / 2 = 6: falls back to DataParallel's chunks 6, 6, 6
    {"balanced-dp 3 devices, gpu0 6 (chunks 6, 6, 6)", StrategyKind::BalancedDataParallel, 3, 6, 6},
};

Scenario scenario(const Layout& layout) {
  Scenario s = test::executable_mlp(layout.strategy, layout.devices, layout.batch);
  if (layout.strategy == StrategyKind::BalancedDataParallel) s.strategy.gpu0_batch = layout.gpu0_batch;
  return s;
}

const Variant kVariants[] = {
    {"adam", [](Scenario&) {}},
    {"sgd", [](Scenario& s) { s.training.optimizer = OptimizerKind::Sgd; }},
    {"momentum", [](Scenario& s) { s.training.optimizer = OptimizerKind::Momentum; }},
    {"adamw", [](Scenario& s) { s.training.optimizer = OptimizerKind::AdamW; }},
    {"cross-entropy", [](Scenario& s) { s.training.loss = LossKind::CrossEntropy; }},
    {"cross-entropy, sgd", [](Scenario& s) {
       s.training.loss = LossKind::CrossEntropy;
       s.training.optimizer = OptimizerKind::Sgd;
     }},
    {"in-place relu", [](Scenario& s) { s.model.inplace_relu = true; }},
    {"pytorch-1.8 (zero_grad in place, reduced gradients added into .grad)",
     [](Scenario& s) { s.accounting.mode = AccountingMode::PyTorch18; }},
};

TEST(ExecutedDataParallel, TrainsAsOneDeviceOnTheWholeBatch) {
  for (const Variant& variant : kVariants) {
    SCOPED_TRACE(variant.what);
    for (const Layout& layout : kLayouts) {
      SCOPED_TRACE(layout.what);
      Scenario single = test::executable_mlp(StrategyKind::Single, 1, layout.global());
      variant.apply(single);
      const Executed reference = run(single);
      Scenario dp = scenario(layout);
      variant.apply(dp);
      const Executed executed = run(dp);
      ASSERT_EQ(executed.result.ranks.size(), static_cast<std::size_t>(layout.devices));
      expect_same_model(executed.result, reference.result);
      // The loss is computed once, on device 0, over the gathered whole batch: the single device's loss.
      ASSERT_TRUE(executed.result.ranks[0].loss.has_value());
      EXPECT_NEAR(*executed.result.ranks[0].loss, *reference.result.ranks[0].loss, 1e-5 * std::max(1.0, *reference.result.ranks[0].loss));
      // The model is device 0's: replica buffers get their values by broadcast and carry no initial values.
      EXPECT_EQ(executed.result.ranks[0].parameters.size(), reference.result.ranks[0].parameters.size());
      for (int d = 1; d < layout.devices; ++d) {
        EXPECT_FALSE(executed.result.ranks[static_cast<std::size_t>(d)].loss.has_value());
        EXPECT_TRUE(executed.result.ranks[static_cast<std::size_t>(d)].parameters.empty());
      }
    }
  }
}

// Parameters above reduce_add_coalesced's 10 MiB chunk are broadcast and reduced alone (a one-tensor chunk: no
// flat buffer; the gradient itself is reduced), the small ones coalesced around them.
TEST(ExecutedDataParallel, LargeParametersTakeTheOneTensorChunkPath) {
  for (StrategyKind strategy : {StrategyKind::DataParallel, StrategyKind::BalancedDataParallel}) {
    SCOPED_TRACE(strategy_name(strategy));
    auto make = [&](StrategyKind kind, int world, int batch) {
      Scenario s = shardscope::testing::make("mlp:2x1700:relu", kind, world, batch, AccountingMode::Exact);
      s.training.steps = 2;
      s.training.optimizer = OptimizerKind::Sgd;
      return s;
    };
    Scenario dp = make(strategy, 3, 2);
    if (strategy == StrategyKind::BalancedDataParallel) dp.strategy.gpu0_batch = 1;  // chunks 1, 3, 2
    const Executed executed = run(dp);
    expect_same_model(executed.result, run(make(StrategyKind::Single, 1, 6)).result);
    expect_measured_equals_predicted(executed);
  }
}

TEST(ExecutedDataParallel, MeasuredMemoryEqualsTheExactAccounting) {
  for (const Layout& layout : kLayouts) {
    SCOPED_TRACE(layout.what);
    for (AccountingMode mode : {AccountingMode::Exact, AccountingMode::PyTorch18}) {
      Scenario s = scenario(layout);
      s.accounting.mode = mode;
      expect_measured_equals_predicted(run(s));
    }
  }
}

}  // namespace
}  // namespace shardscope::exec
