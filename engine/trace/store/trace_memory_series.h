// One rank's memory series in a trace (its Alloc / Free events), stored compactly: 40 bytes a sample in blocks that
// are never moved (SegmentedArray: no copy as a run grows), with each sample's category breakdown rebuilt from the
// category totals kept every kCheckpointEvery samples and the changes since. A 9 M-event trace is mostly
// allocations; the 80-byte TraceMemorySample plus a 32-byte TraceAllocation each took was most of its memory. Reads return TraceMemorySample / TraceAllocation values; iterators are random access (binary search works).
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "core/category.h"
#include "core/units.h"
#include "trace/store/index_iterator.h"
#include "trace/store/segmented_array.h"
#include "trace/events/trace_event.h"

namespace shardscope {

// Memory after one Alloc / Free of a rank.
struct TraceMemorySample {
  TimeNs t_ns = 0;
  Bytes allocated = 0;  // the event's allocated_after
  Bytes reserved = 0;   // the event's reserved_after
  CategoryBytes by_category;  // running sum of Alloc bytes minus Free bytes per category
};

// One Alloc (+bytes) or Free (−bytes) of a tensor, kept so that what is live at any instant can be named.
struct TraceAllocation {
  TimeNs t_ns = 0;
  TensorId tensor = -1;
  Bytes bytes = 0;  // as accounted; negative for a Free
  Category category = Category::Temporaries;
};

class TraceMemorySeries {
 public:
  static constexpr std::size_t kCheckpointEvery = 64;

  // Appends the sample after `change` bytes of `category` (for `tensor`) at t_ns; the caller keeps t_ns ordered and
  // the category's new total within the trace limits.
  void append(TimeNs t_ns, Bytes allocated, Bytes reserved, Category category, Bytes change, TensorId tensor);

  std::size_t size() const { return core_.size(); }
  bool empty() const { return core_.empty(); }
  TraceMemorySample operator[](std::size_t i) const;
  TraceMemorySample back() const { return (*this)[size() - 1]; }
  TimeNs latest_t_ns() const { return core_.back().t_ns; }  // back().t_ns; not empty()
  // (*this)[i].allocated without rebuilding the sample's categories (up to kCheckpointEvery changes replayed): what the
  // peak index asks of every sample, which made it most of a live frame's time.
  Bytes allocated_at(std::size_t i) const { return core_[i].allocated; }
  TimeNs t_ns_at(std::size_t i) const { return core_[i].t_ns; }
  // The first sample of [first, last) later than t (last if none), as std::upper_bound by t_ns, reading times only.
  // The checkpoints' times narrow the range to at most kCheckpointEvery samples first: they are a compact array a
  // cache holds, where a search over millions of samples missed the cache at nearly every step.
  std::size_t first_after(std::size_t first, std::size_t last, TimeNs t) const {
    // Checkpoints k in [k_first, k_last) are the samples k · kCheckpointEvery inside [first, last).
    const std::size_t k_first = (first + kCheckpointEvery - 1) / kCheckpointEvery;
    const std::size_t k_last = (last + kCheckpointEvery - 1) / kCheckpointEvery;
    std::size_t k_low = k_first, k_high = k_last;  // the first checkpoint in range later than t, as upper_bound
    while (k_low < k_high) {
      const std::size_t middle = k_low + (k_high - k_low) / 2;
      if (checkpoint_t_[middle] <= t) k_low = middle + 1;
      else k_high = middle;
    }
    if (k_low > k_first) first = (k_low - 1) * kCheckpointEvery + 1;  // that checkpoint's sample is at or before t
    if (k_low < k_last) last = k_low * kCheckpointEvery;               // and this one's later: the answer is at most it
    while (first < last) {
      const std::size_t middle = first + (last - first) / 2;
      if (core_[middle].t_ns <= t) first = middle + 1;
      else last = middle;
    }
    return first;
  }
  // How many samples lie at or before t: the series up to t.
  std::size_t samples_through(TimeNs t) const { return first_after(0, size(), t); }
  const CategoryBytes& latest_by_category() const { return latest_; }  // back().by_category, without rebuilding
  TraceAllocation allocation(std::size_t i) const;

  // Random-access iterators over values (T = TraceMemorySample or TraceAllocation).
  template <class T>
  class Iterator : public IndexIterator<Iterator<T>> {
   public:
    using value_type = T;
    using pointer = void;
    using reference = T;
    struct Arrow {
      T value;
      const T* operator->() const { return &value; }
    };
    Iterator() = default;
    Iterator(const TraceMemorySeries* s, std::size_t i) : IndexIterator<Iterator>(i), s_(s) {}
    T operator*() const { return get(this->index()); }
    Arrow operator->() const { return {get(this->index())}; }
    T operator[](std::ptrdiff_t n) const { return get(this->index_at(n)); }

   private:
    T get(std::size_t i) const {
      if constexpr (std::is_same_v<T, TraceMemorySample>) return (*s_)[i];
      else return s_->allocation(i);
    }
    const TraceMemorySeries* s_ = nullptr;
  };
  using const_iterator = Iterator<TraceMemorySample>;
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  // The series as its allocations: for (TraceAllocation a : rank.allocations()) ...
  struct Allocations {
    const TraceMemorySeries* s;
    std::size_t size() const { return s->size(); }
    bool empty() const { return s->empty(); }
    TraceAllocation operator[](std::size_t i) const { return s->allocation(i); }
    Iterator<TraceAllocation> begin() const { return {s, 0}; }
    Iterator<TraceAllocation> end() const { return {s, s->size()}; }
  };

 private:
  struct Core {  // 32 bytes
    TimeNs t_ns;
    Bytes allocated;
    Bytes reserved;
    Bytes change;
  };
  struct Tag {  // 8 bytes
    TensorId tensor;
    Category category;
  };
  SegmentedArray<Core> core_;
  SegmentedArray<Tag> tags_;
  SegmentedArray<CategoryBytes> checkpoints_;  // checkpoints_[k]: by_category after sample k * kCheckpointEvery
  SegmentedArray<TimeNs> checkpoint_t_;         // checkpoint_t_[k]: that sample's t_ns
  CategoryBytes latest_;
};

}  // namespace shardscope
