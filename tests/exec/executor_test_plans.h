// Hand-built plans for the executor tests (ProgramBuilder + set_kernel, as an annotated lowering would emit them)
// and plain-loop reference math to hold the executed numbers against.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "exec/data/batch_source.h"
#include "exec/data/parameter_init.h"
#include "plan/program_builder.h"
#include "scenario/scenario.h"

namespace shardscope::exec::test {

constexpr std::uint64_t kSeed = 1234;  // ExecutionOptions' default seed
constexpr int kWidth = 4;              // mlp:1x4: one Linear(4, 4) named fc0

inline ResolvedScenario tiny_scenario(StrategyKind strategy, int world, int batch) {
  Scenario s;
  s.model.spec = "mlp:1x" + std::to_string(kWidth);
  s.training.batch = batch;
  s.training.loss = LossKind::Mse;
  s.training.optimizer = OptimizerKind::Sgd;
  s.cluster.world = world;
  s.strategy.kind = strategy;
  s.accounting.mode = AccountingMode::Exact;
  return resolve_scenario(s);
}

// What one rank's forward and backward of fc0 under MSE produce, computed with plain loops in double.
struct LinearMseStep {
  std::vector<double> weight, bias;            // the initial parameters
  std::vector<double> grad_weight, grad_bias;  // d loss / d parameter
  double loss = 0;
};

inline LinearMseStep reference_step(const std::vector<std::int64_t>& samples) {
  const int n = kWidth, rows = static_cast<int>(samples.size());
  std::vector<float> w(n * n), b(n), x(rows * n), y(rows * n);
  init_parameter(kSeed, "fc0.weight", fan_in_bound(n), 0, w);
  init_parameter(kSeed, "fc0.bias", fan_in_bound(n), 0, b);
  const BatchSource source(kSeed, n);
  source.fill_inputs(samples, x);
  source.fill_regression_targets(samples, n, y);
  LinearMseStep step;
  step.weight.assign(w.begin(), w.end());
  step.bias.assign(b.begin(), b.end());
  step.grad_weight.assign(n * n, 0.0);
  step.grad_bias.assign(n, 0.0);
  const double count = rows * n;  // mean over every element
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < n; ++o) {
      double out = b[o];
      for (int i = 0; i < n; ++i) out += static_cast<double>(x[r * n + i]) * w[o * n + i];
      const double diff = out - y[r * n + o];
      step.loss += diff * diff / count;
      const double grad_out = 2 * diff / count;  // d mean((out - y)²) / d out
      step.grad_bias[o] += grad_out;
      for (int i = 0; i < n; ++i) step.grad_weight[o * n + i] += grad_out * x[r * n + i];
    }
  }
  return step;
}

// Tensors of the hand-built single-layer step.
struct LinearStepTensors {
  TensorId weight = -1, bias = -1, x = -1, y = -1, output = -1, loss = -1, grad_output = -1, grad_weight = -1,
           grad_bias = -1;
  OpIndex backward = -1;
};

// Model creation, then step 1: load, fc0 forward, MSE, its backward, fc0 backward (gradients written to their
// own tensors). `free_output_before_loss` frees fc0's output before the loss reads it: a lowering bug.
inline LinearStepTensors build_forward_backward(ProgramBuilder& b, int rows, bool free_output_before_loss = false) {
  const Bytes f = 4, n = kWidth;
  LinearStepTensors t;
  t.weight = b.alloc("fc0.weight", n * n * f, Category::Parameters, true);
  t.bias = b.alloc("fc0.bias", n * f, Category::Parameters, true);
  b.add_initial_values(t.weight, {"fc0.weight", 0, 0, n * n, n, n * n});
  b.add_initial_values(t.bias, {"fc0.bias", 0, 0, n, n, n});
  b.phase("model_created");
  b.set_step(1);
  t.x = b.alloc("input x", rows * n * f, Category::Activations, true);
  t.y = b.alloc("target y", rows * n * f, Category::Activations, true);
  b.set_kernel(b.compute(ComputeKind::Copy, "load batch", 0, 0), Kernel::LoadBatch, {whole(t.x), whole(t.y)});
  t.output = b.alloc("fc0 output", rows * n * f, Category::Activations);
  b.set_kernel(b.compute(ComputeKind::Forward, "fc0 forward", 2.0 * rows * n * n, 0, 0), Kernel::LinearForward,
               {whole(t.x), whole(t.weight), whole(t.bias), whole(t.output)});
  if (free_output_before_loss) b.release(t.output);
  t.loss = b.alloc("loss", f, Category::Activations, true);
  b.set_kernel(b.compute(ComputeKind::Loss, "mse loss", 3.0 * rows * n, 0), Kernel::MseLoss,
               {whole(t.output), whole(t.y), whole(t.loss)});
  b.phase("forward");
  t.grad_output = b.alloc("loss grad input", rows * n * f, Category::Temporaries);
  b.set_kernel(b.compute(ComputeKind::LossBackward, "loss backward", 3.0 * rows * n, 0), Kernel::MseLossBackward,
               {whole(t.output), whole(t.y), whole(t.grad_output)});
  if (!free_output_before_loss) b.release(t.output);
  t.grad_weight = b.alloc("fc0.weight.grad", n * n * f, Category::Gradients, true);
  t.grad_bias = b.alloc("fc0.bias.grad", n * f, Category::Gradients, true);
  t.backward = b.compute(ComputeKind::Backward, "fc0 backward", 4.0 * rows * n * n, 0, 0);
  b.set_kernel(t.backward, Kernel::LinearBackward,
               {whole(t.grad_output), whole(t.x), whole(t.weight), TensorSlice{}, whole(t.grad_weight),
                whole(t.grad_bias)});
  b.release(t.grad_output);
  return t;
}

inline void build_sgd_step(ProgramBuilder& b, const LinearStepTensors& t) {
  b.phase("before_step");
  b.set_kernel(b.compute(ComputeKind::Optimizer, "optimizer step", 0, 0), Kernel::OptimizerStep,
               {whole(t.weight), whole(t.grad_weight), whole(t.bias), whole(t.grad_bias)});
  b.phase("after_step");
}

}  // namespace shardscope::exec::test
