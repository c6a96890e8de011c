// OpArgs: an op's kernel operands (plan/kernel.h), in a heap array of exactly their count behind 16 bytes, where a
// std::vector took 24: a 1,024-rank plan holds 1.4 M ops, and a simulated one has no operands at all
// (LoweringOptions). Reads like a std::vector<TensorSlice> (iteration, size, indexing); copies copy the operands.
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "plan/kernel.h"

namespace shardscope {

class OpArgs {
 public:
  OpArgs() = default;
  // NOLINTNEXTLINE: implicit, as builders pass vectors
  OpArgs(const std::vector<TensorSlice>& args) { assign(args.data(), args.size()); }
  OpArgs(std::initializer_list<TensorSlice> args) { assign(args.begin(), args.size()); }
  OpArgs(const OpArgs& other) { assign(other.begin(), other.size()); }
  OpArgs(OpArgs&&) noexcept = default;
  OpArgs& operator=(const OpArgs& other) {
    if (this != &other) assign(other.begin(), other.size());
    return *this;
  }
  OpArgs& operator=(OpArgs&&) noexcept = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const TensorSlice* begin() const { return data_.get(); }
  const TensorSlice* end() const { return data_.get() + size_; }
  const TensorSlice& operator[](std::size_t i) const { return data_[i]; }

 private:
  void assign(const TensorSlice* first, std::size_t count) {
    data_ = count > 0 ? std::make_unique<TensorSlice[]>(count) : nullptr;
    std::copy(first, first + count, data_.get());
    size_ = static_cast<std::uint32_t>(count);
  }

  std::unique_ptr<TensorSlice[]> data_;
  std::uint32_t size_ = 0;
};

}  // namespace shardscope
