// OpDeps: the ops an op waits for (indices into its program). Most ops wait for none, one or two, so up to two are
// held inline and only longer lists take a heap block: a std::vector per op meant an allocation for almost every op
// of a plan. Reads like a std::vector<OpIndex> (iteration, size, push_back, indexing).
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace shardscope {

using OpIndex = std::int32_t;

class OpDeps {
 public:
  OpDeps() = default;
  OpDeps(std::initializer_list<OpIndex> deps) { assign(deps.begin(), deps.end()); }
  OpDeps(const std::vector<OpIndex>& deps) { assign(deps.data(), deps.data() + deps.size()); }  // NOLINT: implicit, as builders pass vectors
  OpDeps(const OpDeps& other) { assign(other.begin(), other.end()); }
  OpDeps(OpDeps&& other) noexcept { take(other); }
  OpDeps& operator=(const OpDeps& other) {
    if (this != &other) {
      clear();
      assign(other.begin(), other.end());
    }
    return *this;
  }
  OpDeps& operator=(OpDeps&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~OpDeps() { release(); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const OpIndex* begin() const { return data(); }
  const OpIndex* end() const { return data() + size_; }
  OpIndex* begin() { return data(); }
  OpIndex* end() { return data() + size_; }
  OpIndex operator[](std::size_t i) const { return data()[i]; }
  OpIndex& operator[](std::size_t i) { return data()[i]; }
  void clear() { size_ = 0; }
  void push_back(OpIndex dep) {
    if (size_ == capacity_) grow(capacity_ * 2);
    data()[size_++] = dep;
  }

 private:
  static constexpr std::uint32_t kInline = 2;
  bool on_heap() const { return capacity_ > kInline; }
  const OpIndex* data() const { return on_heap() ? heap_ : inline_; }
  OpIndex* data() { return on_heap() ? heap_ : inline_; }
  void grow(std::uint32_t capacity) {
    auto* block = new OpIndex[capacity];
    std::copy(begin(), end(), block);
    if (on_heap()) delete[] heap_;
    heap_ = block;
    capacity_ = capacity;
  }
  void assign(const OpIndex* first, const OpIndex* last) {
    const auto n = static_cast<std::uint32_t>(last - first);
    if (n > capacity_) grow(n);
    std::copy(first, last, data());
    size_ = n;
  }
  void release() {
    if (on_heap()) delete[] heap_;
    capacity_ = kInline;
    size_ = 0;
  }
  void take(OpDeps& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.on_heap()) heap_ = other.heap_;
    else std::copy(other.inline_, other.inline_ + other.size_, inline_);
    other.capacity_ = kInline;
    other.size_ = 0;
  }

  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = kInline;
  union {
    OpIndex inline_[kInline];
    OpIndex* heap_;
  };
};

}  // namespace shardscope
