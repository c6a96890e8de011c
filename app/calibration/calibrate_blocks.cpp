// GPT-2 blocks through the backend (plan/kernel.h GptBlockForward / GptBlockBackward), dropout off, at a few
// shapes. The profile has no curve for our attention core (scores, causal softmax, the products with V and their
// backward run inside the block), so it is recorded as what the block's measured time leaves once its GEMMs and
// elementwise kernels are taken out as the simulator would time them from the curves measured before
// (sim/profile_costs.h gpt2_block_seconds without the attention core): an "attention" point per shape, kernel
// "shardscope-block-rest". The backward is timed as forward + backward less the forward (the backward uses the
// buffers the forward saved as scratch, so each backward needs a forward before it). Selective recomputation's kernel
// (GptAttentionRecompute: the core again from the saved Q and K, up to its dropped probabilities) is timed on its own
// at the same shapes, after a forward filled the saved buffer: a point of kernel kAttentionRecomputeKernel.
#include <algorithm>
#include <memory>
#include <string>

#include "calibration/calibration_parts.h"
#include "calibration/device_buffers.h"
#include "model/gpt_block_layout.h"
#include "sim/profile_costs.h"

namespace shardscope::calibration {

void calibrate_gpt2_blocks(Context& c) {
  struct Shape {
    int hidden, heads, seq, rows;
  };
  // Head widths 32 and 64; batch × heads 4 to 16; sequences 32 to 128.
  std::vector<Shape> shapes = {{64, 2, 32, 8}, {128, 4, 64, 4}, {64, 2, 64, 2}, {128, 4, 32, 1}, {256, 4, 32, 4}, {128, 2, 128, 2}};
  if (c.kind != exec::BackendKind::Cpu) shapes = {{768, 12, 256, 4}, {768, 12, 512, 8}, {1024, 16, 512, 4}, {512, 8, 1024, 2}};
  if (c.quick) shapes = {{32, 2, 16, 2}};
  const auto partial = std::make_shared<const DeviceProfile>(*c.profile);
  const ProfileCosts costs(partial, Dtype::Fp32);
  auto& points = c.profile->attention["float32"];
  for (const Shape& s : shapes) {
    TransformerConfig config;
    config.hidden = s.hidden;
    config.heads = s.heads;
    config.kv_heads = s.heads;
    config.intermediate = 4 * s.hidden;
    config.max_positions = s.seq;
    config.vocab = 64;
    config.embd_pdrop = config.attn_pdrop = config.resid_pdrop = 0;
    const GptBlockLayout layout = gpt_block_layout(config, s.rows, s.seq, 4);
    const std::int64_t h = s.hidden, i = config.intermediate, nh = std::int64_t{s.rows} * s.seq * h;
    const std::int64_t param_sizes[12] = {h, h, h * 3 * h, 3 * h, h * h, h, h, h, h * i, i, i * h, h};
    DeviceBuffers b(*c.rank);
    std::vector<exec::DeviceBuffer> params, grads;
    for (const std::int64_t n : param_sizes) {
      params.push_back(b.values(n));
      grads.push_back(b.zeros(n * 4));
    }
    const auto input = b.values(nh), output = b.zeros(nh * 4), grad_out = b.values(nh), grad_in = b.zeros(nh * 4);
    const auto saved = b.zeros(layout.saved_bytes), attention = b.zeros(layout.attention_bytes);
    exec::KernelLaunch forward;
    forward.kernel = Kernel::GptBlockForward;
    forward.operands = {input};
    forward.operands.insert(forward.operands.end(), params.begin(), params.end());
    forward.operands.insert(forward.operands.end(), {saved, attention, output});
    exec::KernelLaunch backward = forward;
    backward.kernel = Kernel::GptBlockBackward;
    backward.operands = {grad_out, input};
    backward.operands.insert(backward.operands.end(), params.begin(), params.end());
    backward.operands.insert(backward.operands.end(), {saved, attention, grad_in});
    backward.operands.insert(backward.operands.end(), grads.begin(), grads.end());
    exec::KernelLaunch recompute = forward;
    recompute.kernel = Kernel::GptAttentionRecompute;
    recompute.operands = {saved, attention};
    for (exec::KernelLaunch* l : {&forward, &backward, &recompute}) {
      l->transformer = &config;
      l->seq = s.seq;
      l->rows = s.rows;
      l->training = true;
    }
    const double f = c.time(forward);
    const double recomputed = c.time(recompute);  // reads the Q and K the forwards left in `saved`
    const double both = c.timer.seconds([&]() -> std::optional<TimeNs> {
      const auto tf = c.rank->run_kernel_timed(forward);
      const auto tb = c.rank->run_kernel_timed(backward);
      if (tf && tb) return *tf + *tb;
      return std::nullopt;
    });
    const double bwd = std::max(both - f, 0.0);
    const auto rest = [&](double measured, bool is_backward) {
      const auto others = costs.gpt2_block_seconds(s.rows, s.seq, s.hidden, s.heads, double(i), is_backward, false);
      // Whatever the curves cannot explain, at least a small share of the block (never a negative time).
      return std::max(measured - others.value_or(0), 0.05 * measured);
    };
    const double batch_heads = double(s.rows) * s.heads, head_dim = double(s.hidden / s.heads);
    points.push_back({"shardscope-block-rest", batch_heads, double(s.seq), head_dim, rest(f, false), rest(bwd, true)});
    points.push_back({kAttentionRecomputeKernel, batch_heads, double(s.seq), head_dim, recomputed, 0});
  }
  c.say("gpt-2 blocks: " + std::to_string(shapes.size()) +
        " shapes (attention core as the rest of the block; its selective recomputation)");
}

}  // namespace shardscope::calibration
