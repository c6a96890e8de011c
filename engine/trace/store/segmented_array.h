// SegmentedArray: an array a trace store appends to for a whole run, which grows without moving what it holds.
// A std::vector copies everything it holds each time it doubles: at millions of spans that is a stall of tens of
// milliseconds in the middle of a live run's frame (8 ranks' span arrays doubling in one poll took 20 ms). Here the
// elements live in blocks of 4,096: growing allocates one more block and copies nothing, and element i is block
// i / 4096, slot i % 4096 (a shift and a mask; random access costs one load more than a vector's, which the binary
// searches over millions of spans and samples need to stay cheap). Only the first block grows as a vector does
// (64, 128, … 4,096 elements), so the many arrays of a few elements a big plan has stay small.
// Elements must be trivially copyable (spans, times, indices): they are copied as bytes, never destroyed.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "trace/store/index_iterator.h"

namespace shardscope {

template <class T>
class SegmentedArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "SegmentedArray keeps plain values: it never runs constructors or destructors");

 public:
  template <class Value, class Owner>
  class Iterator : public IndexIterator<Iterator<Value, Owner>> {
   public:
    using value_type = std::remove_const_t<Value>;
    using pointer = Value*;
    using reference = Value&;

    Iterator() = default;
    Iterator(Owner* array, std::size_t index) : IndexIterator<Iterator>(index), array_(array) {}
    operator Iterator<const Value, const Owner>() const  // NOLINT: converts as a vector's iterator does
      requires(!std::is_const_v<Value>)
    {
      return {array_, this->index()};
    }

    reference operator*() const { return (*array_)[this->index()]; }
    pointer operator->() const { return &(*array_)[this->index()]; }
    reference operator[](std::ptrdiff_t n) const { return (*array_)[this->index_at(n)]; }

   private:
    Owner* array_ = nullptr;
  };
  using iterator = Iterator<T, SegmentedArray>;
  using const_iterator = Iterator<const T, const SegmentedArray>;
  using value_type = T;

  SegmentedArray() = default;
  SegmentedArray(const SegmentedArray& other) { *this = other; }
  SegmentedArray& operator=(const SegmentedArray& other) {
    if (this == &other) return *this;
    clear();
    for (const T& value : other) push_back(value);
    return *this;
  }
  SegmentedArray(SegmentedArray&& other) noexcept { swap(other); }
  SegmentedArray& operator=(SegmentedArray&& other) noexcept {
    SegmentedArray moved(std::move(other));  // what this held goes with `moved`
    swap(moved);
    return *this;
  }
  ~SegmentedArray() { clear(); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T& operator[](std::size_t i) { return blocks_[i >> kBlockBits][i & (kBlock - 1)]; }
  const T& operator[](std::size_t i) const { return blocks_[i >> kBlockBits][i & (kBlock - 1)]; }
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

  void push_back(const T& value) {
    if (size_ == capacity_) grow();
    std::construct_at(&(*this)[size_], value);
    ++size_;
  }
  // Inserts before `position`, moving the elements after it up by one (as a vector does); returns the new element.
  iterator insert(const_iterator position, const T& value) {
    const auto index = static_cast<std::size_t>(position - begin());
    push_back(value);
    for (std::size_t i = size_ - 1; i > index; --i) (*this)[i] = (*this)[i - 1];
    (*this)[index] = value;
    return {this, index};
  }
  template <class InputIt>
  void append(InputIt first, InputIt last) {
    for (; first != last; ++first) push_back(*first);
  }
  // Drops the elements from `first` to the end (what erase(first, end()) does on a vector).
  void erase_to_end(const_iterator first) { size_ = static_cast<std::size_t>(first - begin()); }
  void clear() {
    for (std::size_t b = 0; b < blocks_.size(); ++b) std::allocator<T>().deallocate(blocks_[b], block_capacity(b));
    blocks_.clear();
    size_ = capacity_ = 0;
  }
  void swap(SegmentedArray& other) noexcept {
    blocks_.swap(other.blocks_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

 private:
  static constexpr unsigned kBlockBits = 12;
  static constexpr std::size_t kBlock = std::size_t{1} << kBlockBits;  // 4,096 elements
  static constexpr std::size_t kFirstCapacity = 64;

  std::size_t block_capacity(std::size_t block) const { return block == 0 ? std::min(capacity_, kBlock) : kBlock; }
  void grow() {
    if (capacity_ >= kBlock) {  // one more full block: nothing moves
      blocks_.push_back(std::allocator<T>().allocate(kBlock));
      capacity_ += kBlock;
      return;
    }
    // The first block doubles, a copy of at most 2,048 elements.
    const std::size_t capacity = capacity_ == 0 ? kFirstCapacity : capacity_ * 2;
    T* first = std::allocator<T>().allocate(capacity);
    if (capacity_ > 0) {
      std::memcpy(static_cast<void*>(first), blocks_[0], size_ * sizeof(T));
      std::allocator<T>().deallocate(blocks_[0], capacity_);
      blocks_[0] = first;
    } else {
      blocks_.push_back(first);
    }
    capacity_ = capacity;
  }

  std::vector<T*> blocks_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;  // elements the blocks hold room for
};

}  // namespace shardscope
