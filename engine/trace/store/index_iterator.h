// IndexIterator: the arithmetic of a random-access iterator that is a position in an indexed container (the trace
// store's SegmentedArray and TraceMemorySeries), so std::lower_bound and friends work on them. The derived iterator
// (CRTP) adds value_type, reference and pointer and reads the element at index().
#pragma once
#include <compare>
#include <cstddef>
#include <iterator>

namespace shardscope {

template <class Derived>
class IndexIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using difference_type = std::ptrdiff_t;

  std::size_t index() const { return index_; }

  Derived& operator++() { return ++index_, self(); }
  Derived operator++(int) {
    Derived old = self();
    ++index_;
    return old;
  }
  Derived& operator--() { return --index_, self(); }
  Derived operator--(int) {
    Derived old = self();
    --index_;
    return old;
  }
  Derived& operator+=(difference_type n) {
    index_ = static_cast<std::size_t>(static_cast<difference_type>(index_) + n);
    return self();
  }
  Derived& operator-=(difference_type n) { return *this += -n; }
  friend Derived operator+(Derived it, difference_type n) { return it += n; }
  friend Derived operator+(difference_type n, Derived it) { return it += n; }
  friend Derived operator-(Derived it, difference_type n) { return it -= n; }
  friend difference_type operator-(const Derived& a, const Derived& b) {
    return static_cast<difference_type>(a.index_) - static_cast<difference_type>(b.index_);
  }
  friend bool operator==(const Derived& a, const Derived& b) { return a.index_ == b.index_; }
  friend auto operator<=>(const Derived& a, const Derived& b) { return a.index_ <=> b.index_; }

 protected:
  IndexIterator() = default;
  explicit IndexIterator(std::size_t index) : index_(index) {}
  // The element n places on, for operator[].
  std::size_t index_at(difference_type n) const { return static_cast<std::size_t>(static_cast<difference_type>(index_) + n); }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  std::size_t index_ = 0;
};

}  // namespace shardscope
