// span_kind_of_text: the rules listed in span_kind.h.
#include "trace/store/span_kind.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace shardscope {

namespace {

SpanKind compute(ComputeKind kind) { return {OpKind::Compute, kind, CollectiveKind::AllReduce}; }
SpanKind collective(CollectiveKind kind) { return {OpKind::Collective, ComputeKind::Forward, kind}; }

// A communication call's name, lower-cased and without underscores ("_all_gather_base" -> "allgatherbase",
// NCCL's "AllGather" -> "allgather"), up to the first character that cannot be part of one.
std::string squeezed_name(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '_') continue;
    if (!std::isalnum(static_cast<unsigned char>(c))) break;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::optional<SpanKind> communication_kind(const std::string& name) {
  // Longer names first: "reducescatter" before "reduce", "sendrecv" and "batchisendirecv" before "send".
  if (name.starts_with("allreduce")) return collective(CollectiveKind::AllReduce);
  if (name.starts_with("allgather")) return collective(CollectiveKind::AllGather);
  if (name.starts_with("reducescatter")) return collective(CollectiveKind::ReduceScatter);
  if (name.starts_with("broadcast")) return collective(CollectiveKind::Broadcast);
  if (name == "barrier") return collective(CollectiveKind::Barrier);
  if (name == "reduce") return collective(CollectiveKind::Reduce);
  if (name == "gather") return collective(CollectiveKind::Gather);
  if (name == "scatter") return collective(CollectiveKind::Scatter);
  if (name == "sendrecv" || name == "batchisendirecv" || name == "send" || name == "isend")
    return SpanKind{OpKind::Send, ComputeKind::Forward, CollectiveKind::AllReduce};
  if (name == "recv" || name == "irecv") return SpanKind{OpKind::Recv, ComputeKind::Forward, CollectiveKind::AllReduce};
  return std::nullopt;  // all_to_all and the object collectives have no kind of ours
}

}  // namespace

std::string span_kind_name(const SpanKind& kind) {
  if (kind.kind == OpKind::Compute) return compute_kind_name(kind.compute);
  if (kind.kind == OpKind::Collective) return collective_kind_name(kind.collective);
  return op_kind_name(kind.kind);
}

std::optional<SpanKind> span_kind_of_text(std::string_view text) {
  if (text == "forward" || text.starts_with("forward ")) return compute(ComputeKind::Forward);
  if (text == "backward" || text.starts_with("backward ") || text.starts_with("autograd::engine::evaluate_function"))
    return compute(ComputeKind::Backward);
  if (text.starts_with("optimizer step") || text.starts_with("Optimizer.step#")) return compute(ComputeKind::Optimizer);
  if (text.starts_with("Memcpy") || text.starts_with("Memset")) return compute(ComputeKind::Copy);
  // NCCL's kernels: the collective is the word after the prefix ("ncclDevKernel_AllReduce_Sum_f32_RING_LL").
  for (const std::string_view prefix : {"ncclDevKernel_", "ncclKernel_"})
    if (text.starts_with(prefix)) {
      const std::string_view rest = text.substr(prefix.size());
      return communication_kind(squeezed_name(rest.substr(0, rest.find('_'))));
    }
  // The host side of a collective in a profiler trace ("nccl:all_reduce", "gloo:broadcast", "c10d::allreduce_"),
  // or the recorder's call by name ("all_reduce DDP bucket 0 25.00 MiB").
  for (const std::string_view prefix : {"nccl:", "gloo:", "c10d::"})
    if (text.starts_with(prefix)) return communication_kind(squeezed_name(text.substr(prefix.size())));
  return communication_kind(squeezed_name(text));
}

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool matmul_module_class(std::string_view name) {
  return name.find("Linear") != std::string_view::npos || name.starts_with("Conv") || name.starts_with("LazyConv") ||
         name.find("Attention") != std::string_view::npos;
}

bool is_identifier(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

bool span_text_is_matmul(std::string_view text) {
  // The recorder's module span ("forward fc1 (Linear)"): its class is the last parenthesised word. A kernel's
  // argument list there ("backward · fmha_cutlassB_...(PyTorchMemEffAttention::...)") is no class: its name decides.
  if ((text.starts_with("forward ") || text.starts_with("backward ")) && !text.empty() && text.back() == ')') {
    const std::size_t open = text.rfind('(');
    const std::string_view name = text.substr(open + 1, text.size() - open - 2);
    if (open != std::string_view::npos && is_identifier(name)) return matmul_module_class(name);
  }
  const std::string name = lower(text);
  for (const std::string_view word : {"gemm", "xmma", "cutlass", "fmha", "flash", "attention", "convolution", "convolve",
                                      "conv1d", "conv2d", "conv3d", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                                      "aten::matmul", "aten::linear", "mmbackward", "linearbackward"})
    if (name.find(word) != std::string::npos) return true;
  return false;
}

}  // namespace shardscope
