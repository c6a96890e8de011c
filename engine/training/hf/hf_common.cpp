// What GPT-2 and Llama share: parameters, position ids, the eager causal mask, the loss, the SDPA kernel choice.
#include "training/hf/hf_modules.h"

namespace shardscope::hf {

using eager::Dtype;
using eager::Tensor;

eager::Tensor causal_lm_loss(const CausalLm& lm, const eager::Tensor& ids) {
  return lm.model.transformer->family == TransformerFamily::Gpt2 ? detail::gpt2_causal_lm_loss(lm, ids)
                                                                  : detail::llama_causal_lm_loss(lm, ids);
}

namespace detail {

Tensor parameter(const CausalLm& lm, int layer, int index, eager::Sizes sizes) {
  const Layer& spec = lm.model.layers.at(static_cast<std::size_t>(layer));
  if (spec.tied_layer >= 0 && index == 0)  // a tied lm_head uses the embedding's weight
    return lm.e.parameter(lm.params.at(static_cast<std::size_t>(spec.tied_layer)).at(static_cast<std::size_t>(spec.tied_param)),
                          std::move(sizes), spec.tied_layer, spec.tied_param, lm.param_dtype);
  return lm.e.parameter(lm.params.at(static_cast<std::size_t>(layer)).at(static_cast<std::size_t>(index)), std::move(sizes), layer,
                        index, lm.param_dtype);
}

Tensor position_ids(eager::Eager& e, std::int64_t seq) {
  Tensor first = e.empty("arange", {seq}, Dtype::I64);
  Tensor cache_position = e.empty("cache_position", {seq}, Dtype::I64);
  e.compute(e.kind(), "arange", 0, 2 * cache_position.bytes(), eager::elementwise_work(WorkKind::Copy, cache_position.dtype()));
  first.reset();
  return std::move(cache_position).with_layout({1, seq}, {seq, 1});  // cache_position.unsqueeze(0)
}

Tensor eager_causal_mask(eager::Eager& e, std::int64_t batch, std::int64_t seq, Dtype dtype) {
  const bool was = e.grad_enabled;
  e.grad_enabled = false;
  Tensor batch_arange = e.empty("mask batch arange", {batch}, Dtype::I64);
  Tensor head_arange = e.empty("mask head arange", {1}, Dtype::I64);
  Tensor q_first = e.empty("mask q arange", {seq}, Dtype::I64);
  Tensor q_arange = e.empty("mask q arange", {seq}, Dtype::I64);
  q_first.reset();
  Tensor kv_first = e.empty("mask kv arange", {seq}, Dtype::I64);
  Tensor kv_arange = e.empty("mask kv arange", {seq}, Dtype::I64);
  kv_first.reset();
  Tensor allowed = e.empty("mask causal bool", {seq, seq}, Dtype::Bool);
  batch_arange.reset();
  head_arange.reset();
  q_arange.reset();
  kv_arange.reset();
  Tensor zero = e.empty("mask 0.0", {}, dtype);
  Tensor minimum = e.empty("mask finfo.min", {}, dtype);
  Tensor mask = e.empty("causal mask", {batch, 1, seq, seq}, dtype);
  e.compute(e.kind(), "causal mask", static_cast<double>(mask.numel()), mask.bytes(), eager::elementwise_work(WorkKind::Copy, mask.dtype()));
  minimum.reset();
  zero.reset();
  allowed.reset();
  e.grad_enabled = was;
  return mask;
}

Tensor for_causal_lm_loss(eager::Eager& e, const Tensor& logits_in, const Tensor& labels) {
  const eager::ModuleScope scope(e, e.layer, "loss");
  // logits = logits.float()
  Tensor logits = eager::ops::to(e, logits_in, Dtype::F32);
  const std::int64_t batch = labels.size(0), seq = labels.size(1), vocab = logits.sizes().back();
  // labels = nn.functional.pad(labels, (0, 1), value=ignore_index); shift_labels = labels[..., 1:].contiguous()
  Tensor padded = e.empty("labels padded", {batch, seq + 1}, Dtype::I64);
  Tensor shift_labels = e.empty("shift_labels", {batch, seq}, Dtype::I64);
  e.compute(e.kind(), "pad and shift labels", 0, 2 * shift_labels.bytes(), eager::elementwise_work(WorkKind::Copy, shift_labels.dtype()));
  logits = eager::ops::view(e, logits, {batch * seq, vocab});
  shift_labels = std::move(shift_labels).with_layout({batch * seq}, {1});
  Tensor loss = eager::ops::cross_entropy(e, logits, shift_labels);
  // the frame's locals at return, in the order assigned: logits, labels (padded), shift_labels (saved by nll_loss)
  logits.reset();
  padded.reset();
  return loss;
}

eager::ops::SdpaKernel sdpa_kernel(AttentionKind attention, Dtype dtype, bool grouped_query) {
  using eager::ops::SdpaKernel;
  if (attention == AttentionKind::Flash || dtype != Dtype::F32) return SdpaKernel::Flash;
  return grouped_query ? SdpaKernel::Math : SdpaKernel::Efficient;
}

}  // namespace detail
}  // namespace shardscope::hf
