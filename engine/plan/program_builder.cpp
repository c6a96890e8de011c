// ProgramBuilder: reference-counted tensors and op emission for one rank.
#include "plan/program_builder.h"

#include <algorithm>
#include <stdexcept>

namespace shardscope {

ProgramBuilder::ProgramBuilder(int rank, ElementType compute, bool kernel_operands)
    : compute_(compute), kernel_operands_(kernel_operands) {
  program_.rank = rank;
}

OpIndex ProgramBuilder::push(Op op) {
  op.step = step_;
  op.micro_batch = micro_batch_;
  program_.ops.push_back(std::move(op));
  return static_cast<OpIndex>(program_.ops.size() - 1);
}

TensorId ProgramBuilder::alloc(std::string name, Bytes bytes, Category category, bool persistent) {
  return alloc(std::move(name), bytes, category, persistent, compute_);
}

TensorId ProgramBuilder::alloc(std::string name, Bytes bytes, Category category, bool persistent, ElementType element) {
  const auto id = static_cast<TensorId>(program_.tensors.size());
  program_.tensors.push_back({std::move(name), bytes, category, persistent, element, 0, false, {}});
  refcount_.push_back(1);
  if (bytes > 0) {
    Op op;
    op.kind = OpKind::Alloc;
    op.tensor = id;
    op.label = "alloc " + program_.tensors.back().name;
    op.deps = pending_waits_;  // after what the script waited for (wait())
    push(std::move(op));
  }
  return id;
}

void ProgramBuilder::retain(TensorId tensor) {
  if (refcount_.at(tensor) <= 0) throw std::logic_error("retain of freed tensor " + program_.tensors.at(tensor).name);
  ++refcount_[tensor];
}

void ProgramBuilder::release(TensorId tensor) {
  if (refcount_.at(tensor) <= 0) throw std::logic_error("release of freed tensor " + program_.tensors.at(tensor).name);
  if (--refcount_[tensor] > 0 || program_.tensors[tensor].bytes == 0) return;
  Op op;
  op.kind = OpKind::Free;
  op.tensor = tensor;
  op.label = "free " + program_.tensors[tensor].name;
  op.deps = pending_waits_;
  push(std::move(op));
}

void ProgramBuilder::allocate_with(TensorId tensor, OpIndex op) {
  for (auto it = program_.ops.rbegin(); it != program_.ops.rend(); ++it)
    if (it->kind == OpKind::Alloc && it->tensor == tensor) {
      it->deps.push_back(op);
      return;
    }
  throw std::logic_error("allocate_with: no allocation of tensor " + program_.tensors.at(tensor).name);
}

OpIndex ProgramBuilder::compute(ComputeKind kind, std::string label, double flops, Bytes bytes_accessed, int layer) {
  Op op;
  op.kind = OpKind::Compute;
  op.compute_kind = kind;
  op.label = std::move(label);
  op.flops = flops;
  op.bytes_accessed = bytes_accessed;
  op.layer = layer;
  op.deps = std::move(pending_waits_);
  pending_waits_.clear();
  last_compute_ = push(std::move(op));
  return last_compute_;
}

OpIndex ProgramBuilder::collective(CollectiveKind kind, int group, Bytes payload, std::string label, int root,
                                   std::vector<OpIndex> deps) {
  Op op;
  op.kind = OpKind::Collective;
  op.stream = Stream::Communication;
  op.collective_kind = kind;
  op.group = group;
  op.sequence = next_sequence_[group]++;
  op.payload = payload;
  op.root = root;
  op.label = std::move(label);
  op.deps = std::move(deps);
  depend_on_issued_compute(op);
  return push(std::move(op));
}

OpIndex ProgramBuilder::compute_stream_collective(CollectiveKind kind, int group, Bytes payload, std::string label,
                                                  int layer, std::vector<TensorSlice> args) {
  const OpIndex index = collective(kind, group, payload, std::move(label));
  Op& op = program_.ops.at(static_cast<std::size_t>(index));
  op.stream = Stream::Compute;
  op.layer = layer;
  if (kernel_operands_) op.args = std::move(args);
  return index;
}

void ProgramBuilder::depend_on_issued_compute(Op& op) const {
  if (last_compute_ >= 0 && std::find(op.deps.begin(), op.deps.end(), last_compute_) == op.deps.end())
    op.deps.push_back(last_compute_);
}

OpIndex ProgramBuilder::point_to_point(OpKind kind, int peer, Bytes payload, std::string label,
                                       std::vector<OpIndex> deps) {
  Op op;
  op.kind = kind;
  op.stream = Stream::Communication;
  op.peer = peer;
  const auto channel = kind == OpKind::Send ? std::pair{program_.rank, peer} : std::pair{peer, program_.rank};
  op.sequence = next_message_[channel]++;
  op.payload = payload;
  op.label = std::move(label);
  op.deps = std::move(deps);
  depend_on_issued_compute(op);
  return push(std::move(op));
}

OpIndex ProgramBuilder::communication_stream_copy(std::string label, Bytes bytes_accessed, std::vector<OpIndex> deps) {
  Op op;
  op.kind = OpKind::Compute;
  op.compute_kind = ComputeKind::Copy;
  op.stream = Stream::Communication;
  op.label = std::move(label);
  op.bytes_accessed = bytes_accessed;
  op.deps = std::move(deps);
  return push(std::move(op));
}

OpIndex ProgramBuilder::send(int peer, Bytes payload, std::string label, std::vector<OpIndex> deps) {
  return point_to_point(OpKind::Send, peer, payload, std::move(label), std::move(deps));
}

OpIndex ProgramBuilder::recv(int peer, Bytes payload, std::string label, std::vector<OpIndex> deps) {
  return point_to_point(OpKind::Recv, peer, payload, std::move(label), std::move(deps));
}

void ProgramBuilder::phase(const std::string& name) {
  Op op;
  op.kind = OpKind::Phase;
  op.phase = name;
  op.label = name;
  op.deps = pending_waits_;
  push(std::move(op));
}

Program ProgramBuilder::finish() { return std::move(program_); }

}  // namespace shardscope
