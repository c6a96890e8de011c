// Elementwise, reduction and optimizer kernels through the backend (plan/kernel.h's operands), each recorded at the
// bytes the lowering counts for its op (Op::bytes_accessed: training/model_pass.cpp, strategy/*.cpp), which is how
// sim/profile_costs.cpp looks them up: ReLU 2 passes over its elements, ReLU backward 3, MSE loss 3, its backward
// 2, cross-entropy 2, NLL backward 2, log_softmax backward 3, Accumulate 3, Copy 2, Scale 2, Zero 1, the fp16
// unscale 1.5 (an fp32 and a 16-bit pass); LayerNorm and the embedding by their activations (2 passes, backward 3
// for LayerNorm). GELU (tanh) runs inside our GPT-2 block only, so on the CPU it is timed by calling the block's own
// function (exec/cpu/gpt_block_kernels.h), the code the block runs. Zero is timed on memory the caches have let go
// of, as the executor's fill of a new allocation meets it (cold_zero_seconds).
#include <algorithm>
#include <functional>
#include <string>

#include "calibration/calibration_parts.h"
#include "calibration/device_buffers.h"
#include "exec/cpu/gpt_block_kernels.h"

namespace shardscope::calibration {

namespace {

exec::KernelLaunch launch(Kernel kernel, std::vector<exec::DeviceBuffer> operands) {
  exec::KernelLaunch l;
  l.kernel = kernel;
  l.operands = std::move(operands);
  return l;
}

std::vector<std::int64_t> sizes(bool quick, int from, int to) {
  std::vector<std::int64_t> out;
  for (int p = from; p <= to; p += 2) out.push_back(std::int64_t{1} << p);
  if (quick) out = {out.front(), out[1]};
  return out;
}

}  // namespace

// Why cold: a kernel in a training step meets some of its tensors long after their last use. The executor
// zero-fills every tensor it allocates but a cuBLAS workspace (exec/rank_runner.cpp run_alloc), and the block it gets
// back (the host block cache, the CUDA caching allocator) was last written a step earlier, with the step's other
// tensors in between; the optimizer's states are read and written once a step. Timed on the same buffers again and
// again, such a kernel runs from the cache: the zero-fill 3-4× faster on the CPU at 0.25-1 MiB than in a step. So
// each call runs the next of enough copies of those tensors (`make` makes one) to hold more than the caches do:
// 64 MiB on the CPU (beyond its L2; as far as a step's working set from its last use), 256 MiB on a GPU (beyond an
// H100 / H200's 50-60 MB L2); 2 copies at least.
std::int64_t copies_beyond_caches(exec::BackendKind kind, Bytes bytes) {
  const Bytes cache_bytes = kind == exec::BackendKind::Cpu ? Bytes{64} << 20 : Bytes{256} << 20;
  return std::clamp<Bytes>(cache_bytes / std::max<Bytes>(bytes, 1), 2, 4096);
}

double cold_seconds(Context& c, Bytes cold_tensor_bytes, const std::function<exec::KernelLaunch(DeviceBuffers&)>& make) {
  const std::int64_t copies = copies_beyond_caches(c.kind, cold_tensor_bytes);
  DeviceBuffers b(*c.rank);
  std::vector<exec::KernelLaunch> launches;
  for (std::int64_t i = 0; i < copies; ++i) launches.push_back(make(b));
  std::size_t next = 0;
  return c.timer.seconds([&] { return c.rank->run_kernel_timed(launches[next++ % launches.size()]); });
}

double cold_zero_seconds(Context& c, std::int64_t bytes) {
  return cold_seconds(c, bytes, [&](DeviceBuffers& b) { return launch(Kernel::Zero, {b.zeros(bytes)}); });
}

void calibrate_elementwise(Context& c) {
  const std::string dtype = "float32";
  auto& ew = c.profile->elementwise;
  const auto add = [&](const char* op, double bytes, double seconds, double elements) {
    ew[op][dtype].push_back({bytes, seconds, elements, 0});
  };
  const bool cpu = c.kind == exec::BackendKind::Cpu;
  for (const std::int64_t e : sizes(c.quick, 10, cpu ? 22 : 26)) {
    DeviceBuffers b(*c.rank);
    const auto x = b.values(e), y = b.values(e), out = b.zeros(e * 4), scalar = b.zeros(4);
    const auto half = b.values(e, ElementType::Bf16);
    const double eb = 4, n = static_cast<double>(e);
    add("relu", 2 * n * eb, c.time(launch(Kernel::ReluForward, {x, out})), n);
    add("relu_backward", 3 * n * eb, c.time(launch(Kernel::ReluBackward, {y, x, out})), n);
    add("mse_loss", 3 * n * eb, c.time(launch(Kernel::MseLoss, {x, y, scalar})), n);
    exec::KernelLaunch mse_back = launch(Kernel::MseLossBackward, {x, y, out});
    add("mse_loss_backward", 2 * n * eb, c.time(mse_back), n);
    add("accumulate", 3 * n * eb, c.time(launch(Kernel::Accumulate, {out, x})), n);
    // On the CPU a copy's destination (a DDP bucket, a .grad, a gathered buffer) was last written a step before, and
    // a step's copies ran at DRAM's rate there: 0.40-0.47 ms for a 1.6 MB gradient into its bucket, 0.19 ms warm.
    // A GPU's copies stay warm until a lease measures the difference (FORMAT.md).
    const double copy = cpu ? cold_seconds(c, e * 4, [&](DeviceBuffers& cold) { return launch(Kernel::Copy, {cold.zeros(e * 4), x}); })
                            : c.time(launch(Kernel::Copy, {out, x}));
    add("copy", 2 * n * eb, copy, n);
    exec::KernelLaunch scale = launch(Kernel::Scale, {out});
    scale.scale = 0.5;
    add("scale", 2 * n * eb, c.time(scale), n);
    add("zero", n * eb, cold_zero_seconds(c, e * 4), n);
    bool found = false;
    exec::KernelLaunch unscale = launch(Kernel::UnscaleGradients, {out, half});
    unscale.scale = 1.0 / 65536;
    unscale.found_non_finite = &found;
    add("unscale", 1.5 * n * eb, c.time(unscale), n);
    if (cpu) {
      const std::span<float> xs(reinterpret_cast<float*>(x.data), static_cast<std::size_t>(e));
      const std::span<float> outs(reinterpret_cast<float*>(out.data), static_cast<std::size_t>(e));
      add("gelu", 2 * n * eb, c.timer.seconds([&]() -> std::optional<TimeNs> { exec::cpu::gelu_tanh_forward(xs, outs); return std::nullopt; }), n);
      add("gelu_backward", 3 * n * eb,
          c.timer.seconds([&]() -> std::optional<TimeNs> { exec::cpu::gelu_tanh_backward(xs, outs); return std::nullopt; }), n);
    }
  }
  c.say("elementwise: relu, losses, accumulate, copy, scale, zero, unscale" + std::string(cpu ? ", gelu" : ""));

  // Row kernels: cross-entropy over rows × classes, LayerNorm and the embedding over tokens × hidden.
  TransformerConfig config;
  config.hidden = 256;
  config.heads = 4;
  config.intermediate = 1024;
  config.vocab = 1024;
  config.max_positions = 64;
  config.embd_pdrop = config.attn_pdrop = config.resid_pdrop = 0;
  const int classes = 1024, hidden = static_cast<int>(config.hidden), seq = config.max_positions;
  for (const std::int64_t rows : sizes(c.quick, 2, cpu ? 12 : 16)) {
    DeviceBuffers b(*c.rank);
    const double n = static_cast<double>(rows) * classes, eb = 4;
    const auto logits = b.values(rows * classes), log_probs = b.zeros(rows * classes * 4), grad = b.values(rows * classes);
    const auto target = b.ids(rows, classes), scalar = b.zeros(4), grad_logits = b.zeros(rows * classes * 4);
    exec::KernelLaunch ce = launch(Kernel::CrossEntropyLoss, {logits, target, log_probs, scalar});
    ce.rows = static_cast<int>(rows);
    ce.classes = classes;
    add("cross_entropy", 2 * n * eb, c.time(ce), n);
    exec::KernelLaunch nll = launch(Kernel::NllLossBackward, {target, grad});
    nll.rows = static_cast<int>(rows);
    nll.classes = classes;
    add("nll_loss_backward", 2 * n * eb, c.time(nll), n);
    exec::KernelLaunch lsb = launch(Kernel::LogSoftmaxBackward, {grad, log_probs, grad_logits});
    lsb.rows = static_cast<int>(rows);
    lsb.classes = classes;
    add("log_softmax_backward", 3 * n * eb, c.time(lsb), n);

    const double t = static_cast<double>(rows) * hidden;
    const auto in = b.values(rows * hidden), gamma = b.values(hidden), beta = b.values(hidden);
    const auto ln_out = b.zeros(rows * hidden * 4), dgamma = b.zeros(hidden * 4), dbeta = b.zeros(hidden * 4);
    exec::KernelLaunch ln = launch(Kernel::LayerNormForward, {in, gamma, beta, ln_out});
    ln.rows = static_cast<int>(rows);
    ln.transformer = &config;
    add("layer_norm", 2 * t * eb, c.time(ln), t);
    exec::KernelLaunch lnb = launch(Kernel::LayerNormBackward, {in, in, gamma, ln_out, dgamma, dbeta});
    lnb.rows = static_cast<int>(rows);
    lnb.transformer = &config;
    add("layer_norm_backward", 3 * t * eb, c.time(lnb), t);

    // The embedding over rows / seq samples of `seq` tokens.
    const std::int64_t samples = std::max<std::int64_t>(1, rows / seq);
    const double tokens = static_cast<double>(samples) * seq * hidden;
    const auto ids = b.ids(samples * seq, config.vocab), wte = b.values(config.vocab * hidden), wpe = b.values(std::int64_t{seq} * hidden);
    const auto emb = b.zeros(samples * seq * hidden * 4), dwte = b.zeros(config.vocab * hidden * 4), dwpe = b.zeros(std::int64_t{seq} * hidden * 4);
    exec::KernelLaunch ef = launch(Kernel::EmbeddingForward, {ids, wte, wpe, {}, emb});
    ef.rows = static_cast<int>(samples);
    ef.seq = seq;
    ef.transformer = &config;
    add("embedding", 2 * tokens * eb, c.time(ef), tokens);
    exec::KernelLaunch eback = launch(Kernel::EmbeddingBackward, {emb, ids, {}, dwte, dwpe, {}});
    eback.rows = static_cast<int>(samples);
    eback.seq = seq;
    eback.transformer = &config;
    add("embedding_backward", 2 * tokens * eb, c.time(eback), tokens);
  }
  c.say("row kernels: cross-entropy, LayerNorm, embedding");
}

void calibrate_optimizers(Context& c) {
  const std::int64_t tensor_elements = c.quick ? 1 << 12 : 1 << 20;
  const std::pair<const char*, OptimizerKind> kinds[] = {
      {"adam", OptimizerKind::Adam}, {"adamw", OptimizerKind::AdamW}, {"sgd", OptimizerKind::Sgd}, {"momentum", OptimizerKind::Momentum}};
  for (const auto& entry : kinds) {
    const char* name = entry.first;
    const OptimizerKind kind = entry.second;  // not a structured binding: clang 14's lambdas cannot capture those
    const std::size_t state = kind == OptimizerKind::Sgd ? 0 : kind == OptimizerKind::Momentum ? 1 : 2;
    for (const std::int64_t total : sizes(c.quick, 12, c.kind == exec::BackendKind::Cpu ? 22 : 26)) {
      // The parameters and gradients were last used in the backward just before (warm); the states a step ago
      // (cold: cold_seconds).
      const std::int64_t count = std::max<std::int64_t>(1, total / tensor_elements), each = total / count;
      DeviceBuffers warm(*c.rank);
      std::vector<exec::DeviceBuffer> params_and_grads;
      for (std::int64_t i = 0; i < 2 * count; ++i) params_and_grads.push_back(warm.values(each));
      const auto step = [&](DeviceBuffers& cold) {
        exec::KernelLaunch l = launch(Kernel::OptimizerStep, {});
        l.optimizer.kind = kind;
        l.optimizer.lr = kind == OptimizerKind::Adam || kind == OptimizerKind::AdamW ? 1e-3 : 1e-2;
        l.optimizer.weight_decay = kind == OptimizerKind::AdamW ? 0.01 : 0;
        for (std::int64_t p = 0; p < count; ++p) {
          l.operands.push_back(params_and_grads[static_cast<std::size_t>(2 * p)]);
          l.operands.push_back(params_and_grads[static_cast<std::size_t>(2 * p + 1)]);
          for (std::size_t s = 0; s < state; ++s) l.operands.push_back(cold.zeros(each * 4));
          l.optimizer_steps.push_back(2);  // past the first step (momentum's buffer initialisation)
        }
        return l;
      };
      const double seconds = state == 0 ? c.time(step(warm)) : cold_seconds(c, static_cast<Bytes>(state) * each * count * 4, step);
      c.profile->optimizer[name].push_back({double(each * count), seconds, 0, double(count)});
    }
  }
  c.say("optimizer: adam, adamw, sgd, momentum");
}

}  // namespace shardscope::calibration
