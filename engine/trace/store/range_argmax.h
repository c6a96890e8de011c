// RangeArgMax: where the highest value of an append-only series lies within any index range, in O(log n), so a
// chart can draw the exact peak of every pixel column of a series of millions of samples without visiting them.
// The index keeps, per level k, the position and value of the first highest value of every block of 4^(k+1)
// elements (value_of(i) reads element i where the caller keeps it), about 5.3 bytes per element for 8-byte values.
// Ties go to the earliest position, as a left-to-right scan keeping the first maximum would.
#pragma once
#include <cstddef>
#include <vector>

#include "trace/store/segmented_array.h"

namespace shardscope {

template <class Value>
class RangeArgMax {
 public:
  // Element `index` (== the number of elements pushed before) was appended; value_of(i) reads element i.
  template <class ValueOf>
  void push_back(std::size_t index, ValueOf&& value_of) {
    const Entry candidate{index, value_of(index)};
    for (std::size_t k = 0;; ++k) {
      if (k == levels_.size()) {
        // Level k is needed once a second block of level k − 1 exists, i.e. once index reaches 4^k.
        if (k > 0 && (index >> (kShift * k)) == 0) break;
        levels_.emplace_back();
        if (k > 0) levels_[k].push_back(levels_[k - 1][0]);  // block 0 so far: the level below's first block
      }
      SegmentedArray<Entry>& level = levels_[k];
      const std::size_t block = index >> (kShift * (k + 1));
      if (block == level.size()) level.push_back(candidate);
      else if (candidate.value > level[block].value) level[block] = candidate;
      else break;  // this block's maximum is unchanged, and so is every block above it
    }
  }

  // Position of the first highest value in [first, last); requires first < last <= the number of elements.
  template <class ValueOf>
  std::size_t argmax(std::size_t first, std::size_t last, ValueOf&& value_of) const {
    Entry best{first, Value{}};
    bool any = false;
    auto consider = [&](const Entry& e) {
      if (!any || e.value > best.value || (e.index < best.index && !(best.value > e.value))) best = e;
      any = true;
    };
    // Level 0 is the elements themselves, level L ≥ 1 the blocks of 4^L; the range's ragged ends are taken at each
    // level until both ends align with the next level's blocks.
    for (std::size_t level = 0, shift = 0; first < last; ++level, shift += kShift) {
      const std::size_t step = std::size_t{1} << shift, up_mask = (step << kShift) - 1;
      auto at = [&](std::size_t position) {
        return level == 0 ? Entry{position, value_of(position)} : levels_[level - 1][position >> shift];
      };
      while (first < last && (first & up_mask) != 0) {
        consider(at(first));
        first += step;
      }
      while (first < last && (last & up_mask) != 0) {
        last -= step;
        consider(at(last));
      }
    }
    return best.index;
  }

  void clear() { levels_.clear(); }

 private:
  static constexpr std::size_t kShift = 2;  // blocks of 4: about 3 × log4(n) values read per query
  // A block's highest value is kept beside its position: a query reads neighbouring entries of each level instead of
  // one scattered element per candidate (at 100 M events those reads were cache misses, most of a frame's time).
  struct Entry {
    std::size_t index;
    Value value;
  };
  std::vector<SegmentedArray<Entry>> levels_;  // grown without moving what they hold (segmented_array.h)
};

}  // namespace shardscope
