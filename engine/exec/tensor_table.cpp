// TensorTable: liveness per tensor and operand resolution with lowering-bug messages.
#include "exec/tensor_table.h"

namespace shardscope::exec {

TensorTable::TensorTable(const Program& program) : program_(program), entries_(program.tensors.size()) {}

std::string TensorTable::where(OpIndex index) const {
  return "rank " + std::to_string(program_.rank) + " op " + std::to_string(index) + " '" +
         program_.ops.at(static_cast<std::size_t>(index)).label + "'";
}

void TensorTable::on_alloc(TensorId tensor, const Allocation& allocation, OpIndex op) {
  Entry& entry = entries_.at(static_cast<std::size_t>(tensor));
  if (entry.state != State::NotAllocated)
    throw LoweringBug("lowering bug: " + where(op) + " allocates '" + program_.tensors[tensor].name +
                      "' a second time (first at op " + std::to_string(entry.alloc_op) + ")");
  entry = {State::Live, allocation, op, -1};
}

Allocation TensorTable::on_free(TensorId tensor, OpIndex op) {
  Entry& entry = entries_.at(static_cast<std::size_t>(tensor));
  if (entry.state != State::Live)
    throw LoweringBug("lowering bug: " + where(op) + " frees '" + program_.tensors[tensor].name + "', which is " +
                      (entry.state == State::Freed ? "already freed at op " + std::to_string(entry.free_op)
                                                   : std::string("not allocated")));
  entry.state = State::Freed;
  entry.free_op = op;
  return entry.allocation;
}

bool TensorTable::live(TensorId tensor) const { return entries_.at(static_cast<std::size_t>(tensor)).state == State::Live; }

const Allocation& TensorTable::allocation(TensorId tensor) const {
  return entries_.at(static_cast<std::size_t>(tensor)).allocation;
}

DeviceBuffer TensorTable::buffer(TensorId tensor) const {
  const Allocation& a = allocation(tensor);
  const TensorInfo& info = program_.tensors.at(static_cast<std::size_t>(tensor));
  return {static_cast<std::byte*>(a.data), info.bytes, info.element};
}

DeviceBuffer TensorTable::resolve_slice(OpIndex index, const TensorSlice& slice) const {
  if (!slice.present()) return {};
  if (slice.tensor >= static_cast<TensorId>(entries_.size()))
    throw LoweringBug("lowering bug: " + where(index) + " reads tensor " + std::to_string(slice.tensor) +
                      ", which the program does not have");
  const TensorInfo& info = program_.tensors[static_cast<std::size_t>(slice.tensor)];
  const Entry& entry = entries_[static_cast<std::size_t>(slice.tensor)];
  if (entry.state == State::Freed)
    throw LoweringBug("lowering bug: " + where(index) + " reads '" + info.name + "', freed at op " +
                      std::to_string(entry.free_op));
  if (entry.state == State::NotAllocated) {
    if (info.bytes == 0) return {};
    throw LoweringBug("lowering bug: " + where(index) + " reads '" + info.name + "', which is not allocated yet");
  }
  const Bytes bytes = slice.bytes > 0 ? slice.bytes : info.bytes - slice.offset;
  if (slice.offset < 0 || bytes < 0 || slice.offset + bytes > info.bytes)
    throw LoweringBug("lowering bug: " + where(index) + " reads bytes [" + std::to_string(slice.offset) + ", " +
                      std::to_string(slice.offset + bytes) + ") of '" + info.name + "', which holds " +
                      std::to_string(info.bytes) + " bytes");
  return {static_cast<std::byte*>(entry.allocation.data) + slice.offset, bytes, info.element};
}

std::vector<DeviceBuffer> TensorTable::resolve(OpIndex index) const {
  const Op& op = program_.ops.at(static_cast<std::size_t>(index));
  std::vector<DeviceBuffer> buffers;
  buffers.reserve(op.args.size());
  for (const TensorSlice& slice : op.args) buffers.push_back(resolve_slice(index, slice));
  return buffers;
}

}  // namespace shardscope::exec
