// Size checks shared by the CPU kernels, so a wrong shape fails with the kernel's and the operand's names instead
// of reading past a buffer. Standard library only.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace shardscope::exec::cpu {

template <typename T>
void require_size(std::span<T> span, std::size_t expected, std::string_view kernel, std::string_view operand) {
  if (span.size() != expected) {
    throw std::invalid_argument(std::string(kernel) + ": " + std::string(operand) + " has " +
                                std::to_string(span.size()) + " elements, expected " + std::to_string(expected));
  }
}

inline void require_positive(long long value, std::string_view kernel, std::string_view what) {
  if (value <= 0) {
    throw std::invalid_argument(std::string(kernel) + ": " + std::string(what) + " must be positive, got " +
                                std::to_string(value));
  }
}

// True when the two ranges share any byte; kernels that forbid aliasing check it.
template <typename A, typename B>
bool overlaps(std::span<A> a, std::span<B> b) {
  if (a.empty() || b.empty()) return false;
  const auto* a_begin = reinterpret_cast<const std::byte*>(a.data());
  const auto* b_begin = reinterpret_cast<const std::byte*>(b.data());
  return a_begin < b_begin + b.size_bytes() && b_begin < a_begin + a.size_bytes();
}

template <typename A, typename B>
void require_no_overlap(std::span<A> a, std::span<B> b, std::string_view kernel, std::string_view a_name,
                        std::string_view b_name) {
  if (overlaps(a, b)) {
    throw std::invalid_argument(std::string(kernel) + ": " + std::string(a_name) + " and " + std::string(b_name) +
                                " must not overlap");
  }
}

// Elementwise kernels may run in place (same start) but a shifted overlap would read already written values.
template <typename A, typename B>
void require_same_or_disjoint(std::span<A> a, std::span<B> b, const char* kernel, const char* a_name,
                              const char* b_name) {
  if (static_cast<const void*>(a.data()) != static_cast<const void*>(b.data())) {
    require_no_overlap(a, b, kernel, a_name, b_name);
  }
}

}  // namespace shardscope::exec::cpu
