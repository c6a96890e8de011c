// ProfileCosts: compute ops taken apart into the kernels that run them, each timed on the profile's curves.
// Which kernels run where follows the code that runs the op:
// - ours (source "shardscope"): exec/cpu/linear_kernels.cpp (the bias a copy loop before the GEMM, its gradient a
//   row loop), exec/cpu/gpt_block_kernels.cpp (Conv1D GEMMs with bias loops, our attention core, tanh GELU; a
//   tensor-parallel shard at its shard's shapes, in the pieces its parts run);
// - PyTorch 2.x eager (source "pytorch"): nn.Linear is addmm, whose bias rides in cuBLASLt's epilogue
//   (aten/src/ATen/native/cuda/Blas.cpp addmm_out_cuda_impl, "useLtInterface"), so no bias kernel; AddmmBackward0
//   is two mm and a sum over rows for the bias (tools/autograd/derivatives.yaml: addmm, sum_to); mse_loss is one
//   TensorIterator kernel then a mean (aten/src/ATen/native/Loss.cpp mse_loss_out); HF transformers' GPT2Attention
//   eager path is matmul, a division by sqrt(head width), torch.where with the causal mask, softmax, matmul, with
//   q, k, v made contiguous for the batched matmul (matmul's reshape of a transposed view copies); gelu_new is
//   NewGELUActivation's Python expression: pow, mul, add, mul, tanh, add, mul, mul — eight kernels.
#include "sim/profile_costs.h"

#include <algorithm>
#include <cmath>

#include "plan/block_recompute.h"
#include "plan/cublas_workspace.h"
#include "scenario/parallel_layout.h"
#include "sim/profile_interpolation.h"

namespace shardscope {

namespace {

std::optional<double> sum(std::initializer_list<std::optional<double>> parts) {
  double total = 0;
  for (const auto& part : parts) {
    if (!part) return std::nullopt;
    total += *part;
  }
  return total;
}

std::optional<double> times(std::optional<double> seconds, double factor) {
  if (seconds) *seconds *= factor;
  return seconds;
}

std::vector<CurvePoint> curve_of(const std::vector<ProfileSizePoint>& points) {
  std::vector<CurvePoint> curve;
  curve.reserve(points.size());
  for (const auto& p : points) curve.push_back({p.size, p.seconds});
  return curve;
}

std::string collective_key(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::Broadcast: return "broadcast";
    case CollectiveKind::Reduce: return "reduce";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::Scatter: return "scatter";
    case CollectiveKind::Gather: return "gather";
    case CollectiveKind::Barrier: return "barrier";
  }
  return "";
}

// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md), as sim/bus_bandwidth.cpp: the share of S a ring moves
// over each link. Converts a time measured for one kind or rank count into another's at the same bus bandwidth.
double bus_factor(const std::string& kind, double n) {
  if (n <= 1) return 0;
  if (kind == "all_reduce") return 2 * (n - 1) / n;
  if (kind == "broadcast" || kind == "reduce") return 1;
  return (n - 1) / n;  // all_gather, reduce_scatter, scatter, gather
}

}  // namespace

ProfileCosts::ProfileCosts(std::shared_ptr<const DeviceProfile> profile, const ResolvedScenario& scenario)
    : profile_(std::move(profile)),
      model_(&scenario.model),
      optimizer_(scenario.settings.training.optimizer),
      dtype_(profile_dtype_name(scenario.settings.training.dtype)),
      element_bytes_(static_cast<double>(scenario.model.activation_element_bytes)),
      pytorch_(profile_->source == "pytorch") {
  // PyTorch's calibration times gloo between processes that share one GPU: nothing like NCCL between GPUs, so the
  // link model keeps those; on a CPU it is what a gloo job does.
  collectives_usable_ = !profile_->collectives.empty() && !(profile_->backend == "cuda" && profile_->collective_backend == "gloo");
  // Our CPU backend runs every rank as a thread of one process: `world` of them compute at once on the host.
  gemm_slowdown_ = slowdown("gemm", scenario.settings.cluster.world);
  elementwise_slowdown_ = slowdown("elementwise", scenario.settings.cluster.world);
  const auto& strategy = scenario.settings.strategy;
  if (strategy.tp > 1) {
    shard_ = tensor_parallel_shard(*model_, strategy.tp, strategy.sequence_parallel);
    roles_ = tensor_parallel_roles(*shard_);
    block_shard_ = {strategy.tp, strategy.sequence_parallel && model_->transformer};
    micro_batch_ = static_cast<double>(scenario.settings.training.batch) /
                   (is_pipeline(strategy.kind) ? std::max(1, strategy.micro_batches) : 1);
  }
  bool earlier_params = false;
  for (const Layer& layer : model_->layers) {
    input_needs_grad_.push_back(earlier_params);
    earlier_params = earlier_params || !layer.params.empty();
  }
}

ProfileCosts::ProfileCosts(std::shared_ptr<const DeviceProfile> profile, Dtype dtype)
    : profile_(std::move(profile)),
      dtype_(profile_dtype_name(dtype)),
      element_bytes_(element_bytes_of(dtype)),
      pytorch_(profile_->source == "pytorch") {}

// Measured thread counts interpolated linearly; past the largest, the slowdown grows in proportion to the threads
// (they share cores the measurement already filled).
double ProfileCosts::slowdown(const std::string& kind, double threads) const {
  const auto found = profile_->concurrency.find(kind);
  if (found == profile_->concurrency.end() || found->second.empty() || threads <= 1) return 1;
  std::vector<DeviceProfile::ConcurrencyPoint> points = found->second;
  points.push_back({1, 1});
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.threads < b.threads; });
  if (threads >= points.back().threads) return points.back().slowdown * threads / points.back().threads;
  for (std::size_t k = 1; k < points.size(); ++k)
    if (threads <= points[k].threads) {
      const auto& a = points[k - 1];
      const auto& b = points[k];
      return a.slowdown + (b.slowdown - a.slowdown) * (threads - a.threads) / (b.threads - a.threads);
    }
  return 1;
}

std::optional<double> ProfileCosts::gemm_seconds(const std::string& layout, double m, double n, double k, double batch) const {
  return gemm_in(dtype_, layout, m, n, k, batch);
}

std::optional<double> ProfileCosts::gemm_in(const std::string& dtype, const std::string& layout, double m, double n,
                                            double k, double batch) const {
  const auto found = profile_->gemm.find(dtype);
  if (found == profile_->gemm.end()) return std::nullopt;
  if (layout == "batched") {
    // A product and its transpose are one GEMM to the BLAS (Cᵀ = Bᵀ·Aᵀ: cuBLAS and OpenBLAS run a row-major
    // (m, n, k) product as the column-major (n, m, k) one), so points and query are looked up with m ≥ n. The
    // calibrations time batched products with m ≥ n only (scores s × s × d, context s × d × s); the key gradient
    // of attention's scores, Qᵀ·dS (d × s × s), is the context's product transposed, not a shape off the grid.
    if (m < n) std::swap(m, n);
    // The nearest measured batch counts (in log) on either side; time per product interpolated between them.
    std::vector<double> batches;
    for (const auto& g : found->second)
      if (g.layout == "batched") batches.push_back(g.batch);
    if (batches.empty()) return std::nullopt;
    std::sort(batches.begin(), batches.end());
    batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
    const auto per_product = [&](double b) {
      std::vector<GridPoint> points;
      for (const auto& g : found->second)
        if (g.layout == "batched" && g.batch == b)
          points.push_back({{std::max(g.m, g.n), std::min(g.m, g.n), g.k}, 2 * g.m * g.n * g.k, g.seconds / b});
      return grid_seconds(points, {m, n, k}, 2 * m * n * k);
    };
    if (batch <= batches.front()) return per_product(batches.front()).value() * batch;
    if (batch >= batches.back()) return per_product(batches.back()).value() * batch;
    const auto hi = std::upper_bound(batches.begin(), batches.end(), batch);
    const double lo_b = *(hi - 1), hi_b = *hi;
    const double w = (std::log(batch) - std::log(lo_b)) / (std::log(hi_b) - std::log(lo_b));
    return std::exp((1 - w) * std::log(*per_product(lo_b)) + w * std::log(*per_product(hi_b))) * batch;
  }
  std::vector<GridPoint> points;
  for (const auto& g : found->second)
    if (g.layout == layout && g.batch == 1) points.push_back({{g.m, g.n, g.k}, 2 * g.m * g.n * g.k, g.seconds});
  if (points.empty() && layout != "forward") return gemm_in(dtype, "forward", m, n, k, batch);  // the nearest layout measured
  return grid_seconds(points, {m, n, k}, 2 * m * n * k * batch);
}

std::optional<double> ProfileCosts::elementwise_seconds(const std::string& op, double bytes) const {
  return elementwise_in(dtype_, op, bytes);
}

std::optional<double> ProfileCosts::elementwise_in(const std::string& dtype, const std::string& op, double bytes) const {
  if (bytes <= 0) return 0.0;
  const auto found = profile_->elementwise.find(op);
  if (found == profile_->elementwise.end()) return std::nullopt;
  const auto curve = found->second.find(dtype);
  if (curve == found->second.end()) return std::nullopt;
  return curve_seconds(curve_of(curve->second), bytes);
}

std::optional<double> ProfileCosts::optimizer_seconds(OptimizerKind kind, double parameters) const {
  const auto found = profile_->optimizer.find(optimizer_name(kind));
  if (found == profile_->optimizer.end()) return std::nullopt;
  return curve_seconds(curve_of(found->second), parameters);
}

std::optional<double> ProfileCosts::attention_seconds(double batch_heads, double seq, double head_dim, bool backward) const {
  return attention_in(dtype_, batch_heads, seq, head_dim, backward ? CorePass::Backward : CorePass::Forward);
}

std::optional<double> ProfileCosts::attention_in(const std::string& dtype, double batch_heads, double seq,
                                                 double head_dim, CorePass pass) const {
  const auto found = profile_->attention.find(dtype);
  if (found == profile_->attention.end()) return std::nullopt;
  // A recomputation's points (its own kernel, forward_s) or the core's (every other kernel).
  std::vector<const ProfileAttentionPoint*> of_pass;
  for (const auto& a : found->second)
    if ((a.kernel == kAttentionRecomputeKernel) == (pass == CorePass::Recompute)) of_pass.push_back(&a);
  if (of_pass.empty()) return std::nullopt;
  // The points of the head width nearest this one's (in log); time scales with the head width from there.
  double nearest = of_pass.front()->head_dim;
  for (const auto* a : of_pass)
    if (std::abs(std::log(a->head_dim / head_dim)) < std::abs(std::log(nearest / head_dim))) nearest = a->head_dim;
  std::vector<GridPoint> points;
  for (const auto* a : of_pass) {
    const double seconds = pass == CorePass::Backward ? a->backward_s : a->forward_s;
    if (a->head_dim == nearest && seconds > 0)
      points.push_back({{a->batch_heads, a->seq, 1}, a->batch_heads * a->seq * a->seq * a->head_dim, seconds});
  }
  return times(grid_seconds(points, {batch_heads, seq, 1}, batch_heads * seq * seq * nearest), head_dim / nearest);
}

// Selective recomputation of `b` samples' attention core over `heads` heads. PyTorch's eager core up to its
// probabilities; ours as the calibration timed our recomputation kernel (calibrate_blocks.cpp), or, in a profile
// measured before that was timed, the whole core's forward (an upper bound: it includes the product with V).
std::optional<double> ProfileCosts::attention_recompute_seconds(double b, double heads, double s, double d) const {
  if (pytorch_) return pytorch_attention_core(b, heads, s, d, CorePass::Recompute);
  if (const auto recompute = attention_in(dtype_, b * heads, s, d, CorePass::Recompute)) return recompute;
  return attention_in(dtype_, b * heads, s, d, CorePass::Forward);
}

std::optional<double> ProfileCosts::compute_seconds(const Op& op) const {
  if (op.kind != OpKind::Compute) return std::nullopt;
  if (const ComputeWork& work = op.work.get(); work.kind != WorkKind::Unknown) return work_seconds(op, work);
  if (model_ == nullptr) return std::nullopt;
  const Layer* layer = op.layer >= 0 && op.layer < static_cast<int>(model_->layers.size())
                           ? &model_->layers[static_cast<std::size_t>(op.layer)]
                           : nullptr;
  switch (op.kernel) {
    case Kernel::LinearForward:
    case Kernel::LinearBackward:
      if (layer != nullptr && shard_) layer = &shard_->layers[static_cast<std::size_t>(op.layer)];
      return times(layer != nullptr ? linear_seconds(op, *layer) : std::nullopt, gemm_slowdown_);
    case Kernel::GptBlockForward:
    case Kernel::GptBlockBackward:
    case Kernel::GptAttentionRecompute:
    case Kernel::GptBlockAttentionForward:
    case Kernel::GptBlockMlpForward:
    case Kernel::GptBlockResidualNorm:
    case Kernel::GptBlockResidual:
    case Kernel::GptBlockMlpBackward:
    case Kernel::GptBlockAttentionBackward:
    case Kernel::GptBlockInputNormBackward:
    case Kernel::GptBlockAttentionDropoutBackward:
    case Kernel::GptBlockMlpDropoutBackward:
      return times(layer != nullptr ? block_seconds(op, *layer) : std::nullopt, gemm_slowdown_);
    case Kernel::LayerNormForward:  // a sequence-parallel block's ln_1 part runs on its layer
      if (layer != nullptr && layer->kind == LayerKind::TransformerBlock)
        return times(block_seconds(op, *layer), elementwise_slowdown_);
      return times(elementwise_kernel_seconds(op), elementwise_slowdown_);
    case Kernel::OptimizerStep: {
      const bool adam = optimizer_ == OptimizerKind::Adam || optimizer_ == OptimizerKind::AdamW;
      // optimizer_step.cpp counts 12 FLOPs a parameter for Adam / AdamW, 3 for SGD.
      return times(optimizer_seconds(optimizer_, op.flops / (adam ? 12.0 : 3.0)), elementwise_slowdown_);
    }
    case Kernel::LoadBatch: return 0.0;  // the batch is made apart from the step (as the executed step times it)
    default: return times(elementwise_kernel_seconds(op), elementwise_slowdown_);
  }
}

// One kernel of PyTorch's eager mode as the eager pass describes it: its kind's curve in its element type (the
// profile's dtype names), at its shape (GEMMs, attention) or at the bytes it reads and writes (Op::bytes_accessed, as
// the profile's elementwise curves count them: python/shardscope/calibrate.py elementwise_curves). Where the
// profile has no curve of that name, the nearest kernel it has, as the Kernel switch below does.
std::optional<double> ProfileCosts::work_seconds(const Op& op, const ComputeWork& work) const {
  // Integer ids and masks, or not said (opaque): the training dtype's curves.
  const std::optional<Dtype> typed = dtype_of(work.element);
  const std::string dtype = typed ? profile_dtype_name(*typed) : dtype_;
  const double bytes = static_cast<double>(op.bytes_accessed);
  const auto ew = [&](const char* name, double scale = 1) { return elementwise_in(dtype, name, bytes * scale); };
  const auto first = [](std::initializer_list<std::optional<double>> choices) -> std::optional<double> {
    for (const auto& c : choices)
      if (c) return c;
    return std::nullopt;
  };
  const auto m = static_cast<double>(work.m), n = static_cast<double>(work.n), k = static_cast<double>(work.k);
  const auto batch = static_cast<double>(work.batch);
  std::optional<double> seconds;
  switch (work.kind) {
    case WorkKind::Gemm: return times(gemm_in(dtype, gemm_layout_name(work.layout), m, n, k, batch), gemm_slowdown_);
    // The profile's attention is causal self-attention (keys as long as queries), as GPT-2's and Llama's is.
    case WorkKind::Attention:
    case WorkKind::AttentionBackward:
      return times(attention_in(dtype, batch, m, k, work.kind == WorkKind::AttentionBackward ? CorePass::Backward : CorePass::Forward),
                   gemm_slowdown_);
    case WorkKind::Copy: seconds = ew("copy"); break;
    case WorkKind::Unary: seconds = first({ew("gelu"), ew("mul")}); break;
    case WorkKind::Binary: seconds = first({ew("add"), ew("mul")}); break;
    case WorkKind::Relu: seconds = ew("relu"); break;
    case WorkKind::ReluBackward: seconds = ew("relu_backward"); break;
    case WorkKind::Reduction: seconds = ew("sum_rows"); break;
    case WorkKind::Softmax: seconds = ew("softmax"); break;
    case WorkKind::SoftmaxBackward: seconds = first({ew("softmax_backward"), ew("softmax")}); break;  // 3 passes
    case WorkKind::LayerNorm: seconds = ew("layer_norm"); break;
    // 3 passes (dy, x, dx): as two LayerNorm passes over the activation where the kernel was not measured
    case WorkKind::LayerNormBackward: seconds = first({ew("layer_norm_backward"), times(ew("layer_norm", 2.0 / 3), 2)}); break;
    // mse_loss: (x − y)² over 3 passes, then the mean's reduction over one
    case WorkKind::MseLoss: seconds = first({ew("mse_loss"), sum({ew("mul"), ew("sum_rows", 1.0 / 3)})}); break;
    case WorkKind::MseLossBackward: seconds = first({ew("mse_loss_backward"), ew("mul")}); break;
    case WorkKind::Unknown: break;
  }
  return times(seconds, elementwise_slowdown_);
}

// nn.Linear: rows from the op's FLOPs (model_pass.cpp: forward 2·in·out a row; backward twice that when autograd
// also computes the input's gradient); a language model's lm_head maps every token.
std::optional<double> ProfileCosts::linear_seconds(const Op& op, const Layer& layer) const {
  const double tokens = model_->language_model && model_->seq > 0 ? model_->seq : 1;
  double in = static_cast<double>(layer.in_numel) / tokens, out = static_cast<double>(layer.out_numel) / tokens;
  const bool biased = layer.tied_layer < 0 && layer.params.size() > 1;
  const bool input_grad = op.kernel == Kernel::LinearBackward && input_needs_grad_[static_cast<std::size_t>(op.layer)];
  const double passes = op.kernel == Kernel::LinearBackward && input_grad ? 2 : 1;
  double m = std::max(1.0, std::round(op.flops / (layer.forward_flops_per_sample * passes))) * tokens;
  // An MLP shard under sequence parallelism keeps the whole layer's sizes on b/t rows (the shard's FLOPs); its
  // GEMMs run on the all-gathered b rows with the columns (column-parallel) or inputs (row-parallel) split.
  const int t = shard_ ? shard_->sequence_parallel_ranks : 1;
  if (t > 1 && op.layer >= 0 && static_cast<std::size_t>(op.layer) < roles_.size()) {
    const TensorParallelRole role = roles_[static_cast<std::size_t>(op.layer)];
    if (role == TensorParallelRole::ColumnParallel) m *= t, out /= t;
    if (role == TensorParallelRole::RowParallel) m *= t, in /= t;
  }
  const double out_bytes = m * out * element_bytes_;
  if (op.kernel == Kernel::LinearForward) {
    // PyTorch: the bias in cuBLASLt's epilogue; ours: a copy of the bias rows before the GEMM.
    const auto bias = biased && !pytorch_ ? elementwise_seconds("bias_add", 2 * out_bytes) : std::optional<double>(0.0);
    return sum({gemm_seconds("forward", m, out, in), bias});
  }
  const auto dx = input_grad ? gemm_seconds("input_grad", m, in, out) : std::optional<double>(0.0);
  const auto bias = !biased ? std::optional<double>(0.0) : elementwise_seconds(pytorch_ ? "sum_rows" : "bias_grad", out_bytes);
  return sum({dx, gemm_seconds("weight_grad", out, in, m), bias});
}

// Elementwise and reduction kernels by the bytes the op moves as the lowering counts them (Op::bytes_accessed; our
// calibration records its kernels at those bytes), else by PyTorch's kernels that do the same work.
std::optional<double> ProfileCosts::elementwise_kernel_seconds(const Op& op) const {
  const double bytes = static_cast<double>(op.bytes_accessed);
  if (op.flops <= 0 && bytes <= 0) return 0.0;
  const auto first = [&](std::initializer_list<std::optional<double>> choices) -> std::optional<double> {
    for (const auto& c : choices)
      if (c) return c;
    return std::nullopt;
  };
  const auto ew = [&](const char* name, double scale = 1) { return elementwise_seconds(name, bytes * scale); };
  // Elements of a loss's input: model_pass.cpp counts 3 FLOPs an element for MSE and its backward, 5 for
  // cross-entropy (a language model's rows are its tokens).
  switch (op.kernel) {
    case Kernel::ReluForward: return ew("relu");
    case Kernel::ReluBackward: return ew("relu_backward");
    case Kernel::MseLoss: return first({ew("mse_loss"), sum({ew("mul"), ew("sum_rows", 1.0 / 3)})});
    case Kernel::MseLossBackward: return first({ew("mse_loss_backward"), ew("mul", 1.5)});
    case Kernel::CrossEntropyLoss: return first({ew("cross_entropy"), sum({ew("softmax"), ew("sum_rows", 0.5)})});
    // Vocabulary-parallel cross-entropy's parts, each by the bytes its share of the loss moves.
    case Kernel::VocabParallelLossMax:
    case Kernel::VocabParallelLossSums:
    case Kernel::VocabParallelLossFinish: return first({ew("cross_entropy"), ew("softmax")});
    case Kernel::NllLossBackward:
    case Kernel::VocabParallelNllLossBackward: return first({ew("nll_loss_backward"), ew("copy")});
    case Kernel::LogSoftmaxBackward:
    case Kernel::VocabParallelLogSoftmaxBackward: return first({ew("log_softmax_backward"), ew("softmax", 1.5)});
    case Kernel::Accumulate: return first({ew("accumulate"), ew("add")});
    case Kernel::Copy: return ew("copy");
    case Kernel::Scale: return first({ew("scale"), ew("mul")});
    case Kernel::Zero: return first({ew("zero"), ew("copy")});
    case Kernel::UnscaleGradients: return first({ew("unscale"), ew("mul")});
    case Kernel::BiasAdd: return ew("add");             // a row-parallel bias under sequence parallelism
    case Kernel::BiasBackward: return ew("sum_rows");  // its gradient: a sum over rows
    case Kernel::None: return op.flops > 0 ? std::nullopt : ew("copy");  // a library copy; anything else unknown
    default: break;
  }
  // GPT-2's embedding and final LayerNorm: their ops count whole parameter tensors (wte) in their bytes, which the
  // kernels do not stream; key them by the activations they read and write instead.
  const Layer* layer = op.layer >= 0 ? &model_->layers[static_cast<std::size_t>(op.layer)] : nullptr;
  if (layer == nullptr || layer->forward_flops_per_sample <= 0) return std::nullopt;
  // model_pass.cpp: a backward with weights counts twice the forward's FLOPs when the input needs its gradient.
  const bool weights_and_dx = op.compute_kind == ComputeKind::Backward && layer->has_weight() &&
                              input_needs_grad_[static_cast<std::size_t>(op.layer)];
  const double rows = std::max(1.0, std::round(op.flops / (layer->forward_flops_per_sample * (weights_and_dx ? 2 : 1))));
  const double activation = rows * static_cast<double>(layer->out_numel) * element_bytes_;
  switch (op.kernel) {
    case Kernel::EmbeddingForward: return first({elementwise_seconds("embedding", 2 * activation), elementwise_seconds("copy", 2 * activation)});
    case Kernel::EmbeddingBackward:
      return first({elementwise_seconds("embedding_backward", 2 * activation), elementwise_seconds("add", 3 * activation)});
    case Kernel::LayerNormForward: return elementwise_seconds("layer_norm", 2 * activation);
    case Kernel::LayerNormBackward:
      return first({elementwise_seconds("layer_norm_backward", 3 * activation),
                    times(elementwise_seconds("layer_norm", 2 * activation), 2)});
    default: return std::nullopt;
  }
}

// HF GPT-2's eager attention core on PyTorch: b·a batched products and the elementwise passes over the scores. Its
// recomputation stops at the probabilities (CorePass::Recompute): q and k made contiguous, q·kᵀ, scale, mask, softmax.
std::optional<double> ProfileCosts::pytorch_attention_core(double b, double a, double s, double d, CorePass pass) const {
  const double bh = b * a, scores = bh * s * s * element_bytes_, heads = b * s * a * d * element_bytes_;
  if (pass == CorePass::Recompute)
    return sum({elementwise_seconds("copy", 2 * 2 * heads), gemm_seconds("batched", s, s, d, bh),
                elementwise_seconds("mul", 2 * scores), elementwise_seconds("add", 3 * scores),
                elementwise_seconds("softmax", 2 * scores)});
  if (pass == CorePass::Forward)
    return sum({elementwise_seconds("copy", 3 * 2 * heads),          // q, k, v made contiguous for matmul
                gemm_seconds("batched", s, s, d, bh),                // q·kᵀ
                elementwise_seconds("mul", 2 * scores),              // / sqrt(head width)
                elementwise_seconds("add", 3 * scores),              // torch.where(causal mask, w, min)
                elementwise_seconds("softmax", 2 * scores),
                gemm_seconds("batched", s, d, s, bh),                // probabilities · v
                elementwise_seconds("copy", 2 * heads)});            // heads merged (transpose, contiguous)
  return sum({elementwise_seconds("copy", 2 * heads),
              gemm_seconds("batched", s, s, d, bh), gemm_seconds("batched", s, d, s, bh),  // d probabilities, d v
              elementwise_seconds("softmax", 3 * scores),            // softmax backward: y·(dy − Σ y·dy)
              elementwise_seconds("add", 3 * scores),                // where backward
              elementwise_seconds("mul", 2 * scores),                // division backward
              gemm_seconds("batched", s, d, s, bh), gemm_seconds("batched", s, d, s, bh),  // d q, d k
              elementwise_seconds("copy", 3 * 2 * heads)});
}

unsigned ProfileCosts::block_pieces(const Op& op) const {
  const unsigned pieces = block_pieces_of_kernel(op);
  // A full recomputation stops after GELU (plan/block_recompute.h).
  return is_full_recompute(op) ? pieces & ~(kMlpOutputGemm | kResidual2) : pieces;
}

unsigned ProfileCosts::block_pieces_of_kernel(const Op& op) const {
  const bool sp = block_shard_.sequence_parallel;
  switch (op.kernel) {
    case Kernel::GptBlockAttentionForward:
      return sp ? kAttentionGemms | kAttentionCore : kNorm1 | kAttentionGemms | kAttentionCore | kResidual1;
    case Kernel::GptBlockMlpForward: return sp ? kMlpGemms | kGelu : kNorm2 | kMlpGemms | kGelu | kResidual2;
    case Kernel::GptBlockResidualNorm: return kResidual1 | kNorm2;
    case Kernel::GptBlockResidual: return kResidual2;
    case Kernel::GptBlockMlpBackward: return sp ? kMlpGemms | kGelu : kMlpGemms | kGelu | kResidual2;
    case Kernel::GptBlockAttentionBackward:
      return sp ? kAttentionGemms | kAttentionCore
                : kNorm2 | kResidualCopy | kAttentionGemms | kAttentionCore | kResidual1;
    case Kernel::GptBlockInputNormBackward:
    case Kernel::LayerNormForward: return kNorm1;
    case Kernel::GptBlockAttentionDropoutBackward: return kNorm2 | kResidualCopy | kResidual1;
    case Kernel::GptBlockMlpDropoutBackward: return kResidual2;
    default: return kWholeBlock;
  }
}

// One GPT-2 block (forward, backward, or the selective recomputation of its attention core), or one of its
// tensor-parallel parts, as its kernels run.
std::optional<double> ProfileCosts::block_seconds(const Op& op, const Layer& layer) const {
  if (!model_->transformer || model_->transformer->family != TransformerFamily::Gpt2) return std::nullopt;
  const TransformerConfig& c = *model_->transformer;
  const double s = model_->seq, h = static_cast<double>(c.hidden), i = static_cast<double>(c.intermediate);
  const double a = c.heads, d = h / a;
  const bool backward = op.compute_kind == ComputeKind::Backward;
  if (shard_) {  // the shard's shapes on the strategy's micro-batch (a part's FLOPs are only its share)
    const double t = block_shard_.tp;
    if (op.kernel == Kernel::GptAttentionRecompute) return attention_recompute_seconds(micro_batch_, a / t, s, d);
    return gpt2_block_seconds(micro_batch_, s, h, a, i, backward, true, block_shard_, block_pieces(op));
  }
  if (op.kernel == Kernel::GptAttentionRecompute) {
    const double b = std::max(1.0, std::round(op.flops / layer.attention_recompute_flops_per_sample));
    return attention_recompute_seconds(b, a, s, d);
  }
  // model_pass.cpp: a block's backward counts twice its forward's FLOPs (it has weights, and its input needs a gradient).
  const double per_sample = layer.forward_pass_flops_per_sample(is_full_recompute(op));
  const double b = std::max(1.0, std::round(op.flops / (per_sample * (backward ? 2 : 1))));
  return gpt2_block_seconds(b, s, h, a, i, backward, true, {}, block_pieces(op));
}

std::optional<double> ProfileCosts::gpt2_block_seconds(double b, double s, double h, double a, double i, bool backward,
                                                       bool with_attention, BlockShard shard, unsigned pieces) const {
  const double t = shard.tp, d = h / a, n = b * s;
  // Outside the regions (norms, residuals) a sequence-parallel rank holds n / t tokens; inside, every token.
  const double outside = shard.sequence_parallel ? n / t : n;
  const double nh = outside * h * element_bytes_, ni = n * (i / t) * element_bytes_;
  const auto has = [pieces](unsigned piece) { return (pieces & piece) != 0; };
  const double norms = has(kNorm1) + has(kNorm2), residuals = has(kResidual1) + has(kResidual2);
  // The block's four Conv1D layers (out, in): c_attn's and c_fc's columns, the c_projs' rows split over the shard.
  const double convs[4][2] = {{3 * h / t, h}, {h, h / t}, {i / t, h}, {h, i / t}};
  double total = 0;
  const auto add = [&](std::optional<double> part) {
    if (part) total += *part;
    return part.has_value();
  };
  bool ok = true;
  for (std::size_t k = 0; k < 4; ++k) {
    if (!has(k < 2 ? kAttentionGemms : k == 2 ? kMlpInputGemm : kMlpOutputGemm)) continue;
    const double out = convs[k][0], in = convs[k][1];
    if (!backward) {
      ok &= add(gemm_seconds("forward", n, out, in));
      if (!pytorch_) ok &= add(elementwise_seconds("bias_add", 2 * n * out * element_bytes_));
    } else {
      ok &= add(gemm_seconds("input_grad", n, in, out));
      ok &= add(gemm_seconds("weight_grad", out, in, n));
      ok &= add(elementwise_seconds(pytorch_ ? "sum_rows" : "bias_grad", n * out * element_bytes_));
    }
  }
  const bool core = with_attention && has(kAttentionCore);
  if (pytorch_) {
    if (core) ok &= add(pytorch_attention_core(b, a / t, s, d, backward ? CorePass::Backward : CorePass::Forward));
    if (!backward) {
      if (norms > 0) ok &= add(times(elementwise_seconds("layer_norm", 2 * nh), norms));
      if (residuals > 0) ok &= add(times(elementwise_seconds("add", 3 * nh), residuals));  // residuals
      // gelu_new: pow, mul, add, mul, tanh, add, mul (2 passes each) and the last mul (3 passes).
      if (has(kGelu)) {
        ok &= add(times(elementwise_seconds("mul", 2 * ni), 7));
        ok &= add(elementwise_seconds("mul", 3 * ni));
      }
    } else {
      if (norms > 0) ok &= add(times(elementwise_seconds("layer_norm", 2 * nh), 2 * norms));
      if (residuals > 0) ok &= add(times(elementwise_seconds("add", 3 * nh), residuals));  // gradient sums
      // Autograd of the gelu_new chain: about two kernels of 3 passes for each of the eight.
      if (has(kGelu)) ok &= add(times(elementwise_seconds("mul", 3 * ni), 16));
    }
  } else {
    if (core) ok &= add(attention_seconds(b * a / t, s, d, backward));
    // Our GELU runs inside the block's kernel. A CPU calibration times it apart (the function the block calls); a
    // CUDA one cannot, and then the block's measured rest (calibrate_blocks.cpp, through this same function) holds
    // it, so it is left out here on both sides rather than failing the block over to the roofline.
    const char* gelu = backward ? "gelu_backward" : "gelu";
    if (has(kGelu) && profile_->elementwise.count(gelu) != 0)
      ok &= add(elementwise_seconds(gelu, (backward ? 3 : 2) * ni));
    if (!backward) {
      if (norms > 0) ok &= add(times(elementwise_seconds("layer_norm", 2 * nh), norms));
      if (residuals > 0) ok &= add(times(elementwise_seconds("accumulate", 3 * nh), residuals));
    } else {
      if (norms > 0) ok &= add(times(elementwise_seconds("layer_norm_backward", 3 * nh), norms));
      if (has(kResidualCopy)) ok &= add(elementwise_seconds("copy", 2 * nh));  // the residual path's gradient
    }
  }
  if (!ok) return std::nullopt;
  return total;
}

std::optional<double> ProfileCosts::collective_seconds(CollectiveKind kind, int ranks, double bytes) const {
  if (!collectives_usable_ || ranks <= 1) return std::nullopt;
  if (kind == CollectiveKind::Barrier) return 0.0;
  const std::string key = collective_key(kind);
  // Its own kind when measured, else all-reduce's bus bandwidth; the measured rank count nearest this one, carried
  // over at the same bus bandwidth (nccl-tests' factors), as a ring's time follows its factor.
  const std::string from = profile_->collectives.contains(key) ? key : "all_reduce";
  const auto found = profile_->collectives.find(from);
  if (found == profile_->collectives.end() || found->second.empty()) return std::nullopt;
  double nearest = found->second.front().ranks;
  for (const auto& p : found->second)
    if (std::abs(p.ranks - ranks) < std::abs(nearest - ranks)) nearest = p.ranks;
  std::vector<CurvePoint> curve;
  for (const auto& p : found->second)
    if (p.ranks == nearest) curve.push_back({p.bytes, p.seconds});
  const double scale = bus_factor(key, ranks) / bus_factor(from, nearest);
  // A curve measured over S: the same bus traffic S·factor lies at S·scale of the measured kind.
  return curve_seconds(curve, bytes * scale);
}

std::optional<double> ProfileCosts::message_seconds(double bytes) const {
  if (!collectives_usable_) return std::nullopt;
  if (const auto found = profile_->collectives.find("send_recv"); found != profile_->collectives.end()) {
    std::vector<CurvePoint> curve;
    for (const auto& p : found->second) curve.push_back({p.bytes, p.seconds});
    return curve_seconds(curve, bytes);
  }
  // A message is a broadcast between two ranks.
  return collective_seconds(CollectiveKind::Broadcast, 2, bytes);
}

double ProfileCosts::host_seconds(const Program& program, const Op& op) const {
  if (profile_->executor_op_s <= 0) return 0;
  double seconds = profile_->executor_op_s;
  if (op.kind == OpKind::Alloc && op.tensor >= 0 && static_cast<std::size_t>(op.tensor) < program.tensors.size() &&
      !is_gemm_workspace(program.tensors[static_cast<std::size_t>(op.tensor)].name.str())) {
    // The executor zero-fills every tensor it allocates but the GEMM workspaces (exec/rank_runner.cpp run_alloc).
    const double bytes = static_cast<double>(program.tensors[static_cast<std::size_t>(op.tensor)].bytes);
    if (const auto found = profile_->elementwise.find("zero"); found != profile_->elementwise.end())
      if (const auto curve = found->second.find("float32"); curve != found->second.end())
        seconds += curve_seconds(curve_of(curve->second), bytes).value_or(0);
  }
  return seconds;
}

}  // namespace shardscope
