// SGD, momentum SGD, Adam and AdamW updates, elementwise in fp32 with the step's scalars computed in double as
// torch computes them in Python floats.
//
// Speed: each update is one pass over its arrays (the gradient read once, every state read and written once), so
// it runs at memory bandwidth once the compiler vectorises it. For that the inner loops have no branch (every choice
// that is fixed for a whole update, weight decay, momentum, first step, the lerp form, is a template parameter or
// hoisted), no aliasing (restrict pointers: the spans are distinct buffers) and no errno-setting sqrt (CMake
// compiles this file with -fno-math-errno). sqrt and division are IEEE-exact in SSE/AVX lanes as in scalar code,
// and this file is compiled with -ffp-contract=off, so the vector loops give the same bits as the scalar formulas.
#include "exec/cpu/optimizer_kernels.h"

#include <cmath>
#include <string>

#include "exec/cpu/span_checks.h"

namespace shardscope::exec::cpu {
namespace {

// How weight decay enters an update: not at all, as L2 on the gradient (SGD, Adam), or decoupled (AdamW).
enum class Decay { None, L2, Decoupled };

// torch.lerp's CPU formula (aten/src/ATen/native/Lerp.h, lerp): two forms so that weight 1 returns `end` exactly.
// The form depends on the weight only, which is the same for a whole update: SmallWeight picks it outside the loop.
template <bool SmallWeight>
inline float lerp(float self, float end, float weight) {
  if constexpr (SmallWeight) {
    return self + weight * (end - self);
  } else {
    return end - (end - self) * (1.0f - weight);
  }
}

struct AdamScalars {
  float step_size, bias_correction2_sqrt, decay_factor, one_minus_beta1, one_minus_beta2, beta2, eps, weight_decay;
};

template <Decay kDecay, bool kSmallLerpWeight>
void adam_loop(const AdamScalars s, std::size_t n, float* __restrict params, const float* __restrict grads,
               float* __restrict exp_avg, float* __restrict exp_avg_sq) {
  for (std::size_t i = 0; i < n; ++i) {
    float g = grads[i];
    float p = params[i];
    if constexpr (kDecay == Decay::Decoupled) p *= s.decay_factor;
    if constexpr (kDecay == Decay::L2) g += s.weight_decay * p;
    const float m = lerp<kSmallLerpWeight>(exp_avg[i], g, s.one_minus_beta1);
    const float v = exp_avg_sq[i] * s.beta2 + s.one_minus_beta2 * g * g;
    const float denom = std::sqrt(v) / s.bias_correction2_sqrt + s.eps;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    params[i] = p + -s.step_size * (m / denom);
  }
}

template <Decay kDecay>
void adam_loop_for_weight(const AdamScalars& s, std::span<float> params, std::span<const float> grads,
                          std::span<float> exp_avg, std::span<float> exp_avg_sq) {
  if (std::abs(s.one_minus_beta1) < 0.5f) {
    adam_loop<kDecay, true>(s, params.size(), params.data(), grads.data(), exp_avg.data(), exp_avg_sq.data());
  } else {
    adam_loop<kDecay, false>(s, params.size(), params.data(), grads.data(), exp_avg.data(), exp_avg_sq.data());
  }
}

void adam_update(const AdamOptions& o, std::int64_t step, bool decoupled_decay, std::span<float> params,
                 std::span<const float> grads, std::span<float> exp_avg, std::span<float> exp_avg_sq,
                 const char* kernel) {
  require_size(grads, params.size(), kernel, "grads");
  require_size(exp_avg, params.size(), kernel, "exp_avg");
  require_size(exp_avg_sq, params.size(), kernel, "exp_avg_sq");
  if (step < 1) throw std::invalid_argument(std::string(kernel) + ": step must be 1 or more, got " + std::to_string(step));
  const double bias_correction1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  const AdamScalars s{
      .step_size = static_cast<float>(o.lr / bias_correction1),
      .bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2)),
      .decay_factor = static_cast<float>(1.0 - o.lr * o.weight_decay),
      .one_minus_beta1 = static_cast<float>(1.0 - o.beta1),
      .one_minus_beta2 = static_cast<float>(1.0 - o.beta2),
      .beta2 = static_cast<float>(o.beta2),
      .eps = static_cast<float>(o.eps),
      .weight_decay = static_cast<float>(o.weight_decay),
  };
  if (decoupled_decay) {
    adam_loop_for_weight<Decay::Decoupled>(s, params, grads, exp_avg, exp_avg_sq);
  } else if (o.weight_decay != 0.0) {
    adam_loop_for_weight<Decay::L2>(s, params, grads, exp_avg, exp_avg_sq);
  } else {
    adam_loop_for_weight<Decay::None>(s, params, grads, exp_avg, exp_avg_sq);
  }
}

// Which momentum rule applies: none (no buffer), the first step's buf = g, or buf = momentum·buf + (1 − dampening)·g.
enum class Momentum { None, First, Later };

struct SgdScalars {
  float minus_lr, weight_decay, momentum, one_minus_dampening;
};

template <bool kL2, Momentum kMomentum>
void sgd_loop(const SgdScalars s, std::size_t n, float* __restrict params, const float* __restrict grads,
              float* __restrict momentum_buffer) {
  for (std::size_t i = 0; i < n; ++i) {
    float g = grads[i];
    const float p = params[i];
    if constexpr (kL2) g += s.weight_decay * p;
    if constexpr (kMomentum == Momentum::First) {
      momentum_buffer[i] = g;
    } else if constexpr (kMomentum == Momentum::Later) {
      g = momentum_buffer[i] * s.momentum + s.one_minus_dampening * g;
      momentum_buffer[i] = g;
    }
    params[i] = p + s.minus_lr * g;
  }
}

template <bool kL2>
void sgd_loop_for_momentum(const SgdScalars& s, bool with_momentum, bool first_step, std::span<float> params,
                           std::span<const float> grads, std::span<float> momentum_buffer) {
  float* buffer = with_momentum ? momentum_buffer.data() : nullptr;
  if (!with_momentum) {
    sgd_loop<kL2, Momentum::None>(s, params.size(), params.data(), grads.data(), buffer);
  } else if (first_step) {
    sgd_loop<kL2, Momentum::First>(s, params.size(), params.data(), grads.data(), buffer);
  } else {
    sgd_loop<kL2, Momentum::Later>(s, params.size(), params.data(), grads.data(), buffer);
  }
}

}  // namespace

void sgd_step(const SgdOptions& o, bool first_step, std::span<float> params, std::span<const float> grads,
              std::span<float> momentum_buffer) {
  require_size(grads, params.size(), "sgd_step", "grads");
  const bool with_momentum = o.momentum != 0.0;
  if (with_momentum) require_size(momentum_buffer, params.size(), "sgd_step", "momentum_buffer");
  const SgdScalars s{
      .minus_lr = static_cast<float>(-o.lr),
      .weight_decay = static_cast<float>(o.weight_decay),
      .momentum = static_cast<float>(o.momentum),
      .one_minus_dampening = static_cast<float>(1.0 - o.dampening),
  };
  if (o.weight_decay != 0.0) {
    sgd_loop_for_momentum<true>(s, with_momentum, first_step, params, grads, momentum_buffer);
  } else {
    sgd_loop_for_momentum<false>(s, with_momentum, first_step, params, grads, momentum_buffer);
  }
}

void adam_step(const AdamOptions& options, std::int64_t step, std::span<float> params, std::span<const float> grads,
               std::span<float> exp_avg, std::span<float> exp_avg_sq) {
  adam_update(options, step, /*decoupled_decay=*/false, params, grads, exp_avg, exp_avg_sq, "adam_step");
}

void adamw_step(const AdamOptions& options, std::int64_t step, std::span<float> params, std::span<const float> grads,
                std::span<float> exp_avg, std::span<float> exp_avg_sq) {
  adam_update(options, step, /*decoupled_decay=*/true, params, grads, exp_avg, exp_avg_sq, "adamw_step");
}

}  // namespace shardscope::exec::cpu
