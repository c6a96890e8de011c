// TrackingAllocator's accounting, events and failure injection, and the aligned host-memory backend (through a
// cache of freed blocks).
// Depends on core/ and the CPU backend's block cache.
#include "exec/tracking_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace shardscope::exec {

Allocation TrackingAllocator::allocate(Bytes bytes, Category category, std::string_view name, int stream) {
  if (bytes <= 0) {
    throw std::invalid_argument("allocate '" + std::string(name) + "' (" + std::string(category_key(category)) +
                                "): size must be positive, got " + std::to_string(bytes) + " B");
  }
  std::lock_guard lock(mutex_);
  ++allocation_calls_;
  if (failure_plan_.fail_nth_allocation && allocation_calls_ == *failure_plan_.fail_nth_allocation) {
    throw_out_of_memory_locked("injected failure of allocation #" + std::to_string(allocation_calls_), name,
                               category, bytes);
  }
  if (failure_plan_.budget_bytes && live_total_ + bytes > *failure_plan_.budget_bytes) {
    throw_out_of_memory_locked(failure_plan_.budget_name + " of " + format_bytes(*failure_plan_.budget_bytes) + " exceeded", name,
                               category, bytes);
  }
  const RawBlock block = raw_allocate(bytes, stream);
  if (block.data == nullptr) throw_out_of_memory_locked("the backend has no room", name, category, bytes);

  Allocation allocation{block.data, bytes, block.counted_bytes, category, next_id_++};
  live_records_.emplace(block.data, LiveRecord{allocation, std::string(name)});
  live_[category] += block.counted_bytes;
  live_total_ += block.counted_bytes;
  peak_[category] = std::max(peak_[category], live_[category]);
  peak_total_ = std::max(peak_total_, live_total_);
  if (listener_) {
    listener_({AllocationEventKind::Alloc, allocation.id, name, category, block.counted_bytes, live_total_,
               reserved_bytes_locked()});
  }
  return allocation;
}

void TrackingAllocator::complete_late_frees() {
  std::lock_guard lock(mutex_);
  raw_complete_late_frees();
}

void TrackingAllocator::free(void* data, bool completes_late) {
  std::lock_guard lock(mutex_);
  const auto it = live_records_.find(data);
  if (it == live_records_.end()) {
    throw std::invalid_argument("free of a pointer that is not a live allocation of this allocator "
                                "(double free, or allocated elsewhere)");
  }
  const LiveRecord record = std::move(it->second);
  live_records_.erase(it);
  if (completes_late) raw_free_late(data, record.allocation.requested_bytes);
  else raw_free(data, record.allocation.requested_bytes);
  live_[record.allocation.category] -= record.allocation.counted_bytes;
  live_total_ -= record.allocation.counted_bytes;
  if (listener_) {
    listener_({AllocationEventKind::Free, record.allocation.id, record.name, record.allocation.category,
               record.allocation.counted_bytes, live_total_, reserved_bytes_locked()});
  }
}

void TrackingAllocator::throw_out_of_memory_locked(std::string_view reason, std::string_view name,
                                                   Category category, Bytes bytes) const {
  std::string message = "out of memory allocating '" + std::string(name) + "' (" +
                        std::string(category_key(category)) + ", " + std::to_string(bytes) + " B = " +
                        format_bytes(bytes) + "): " + std::string(reason) + "; live " + format_bytes(live_total_) +
                        " in " + std::to_string(live_records_.size()) + " allocations";
  std::string per_category;
  for (Category c : kAllCategories) {
    if (live_[c] == 0) continue;
    per_category += (per_category.empty() ? "" : ", ") + std::string(category_key(c)) + " " + format_bytes(live_[c]);
  }
  if (!per_category.empty()) message += " (" + per_category + ")";
  // The largest live tensors say more than the totals about what to shrink.
  std::vector<const LiveRecord*> largest;
  for (const auto& [data, record] : live_records_) largest.push_back(&record);
  const std::size_t shown = std::min<std::size_t>(3, largest.size());
  std::partial_sort(largest.begin(), largest.begin() + static_cast<std::ptrdiff_t>(shown), largest.end(),
                    [](const LiveRecord* a, const LiveRecord* b) {
                      return a->allocation.counted_bytes != b->allocation.counted_bytes
                                 ? a->allocation.counted_bytes > b->allocation.counted_bytes
                                 : a->allocation.id < b->allocation.id;
                    });
  for (std::size_t i = 0; i < shown; ++i) {
    message += (i == 0 ? "; largest: '" : ", '") + largest[i]->name + "' " +
               format_bytes(largest[i]->allocation.counted_bytes);
  }
  throw OutOfMemoryError(std::move(message), std::string(name), category, bytes, live_);
}

CategoryBytes TrackingAllocator::live_bytes() const {
  std::lock_guard lock(mutex_);
  return live_;
}
Bytes TrackingAllocator::live_total_bytes() const {
  std::lock_guard lock(mutex_);
  return live_total_;
}
CategoryBytes TrackingAllocator::peak_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_;
}
Bytes TrackingAllocator::peak_total_bytes() const {
  std::lock_guard lock(mutex_);
  return peak_total_;
}
std::size_t TrackingAllocator::live_allocation_count() const {
  std::lock_guard lock(mutex_);
  return live_records_.size();
}
void TrackingAllocator::reset_peaks() {
  std::lock_guard lock(mutex_);
  peak_ = live_;
  peak_total_ = live_total_;
}
void TrackingAllocator::set_listener(Listener listener) {
  std::lock_guard lock(mutex_);
  listener_ = std::move(listener);
}
void TrackingAllocator::set_failure_plan(AllocationFailurePlan plan) {
  std::lock_guard lock(mutex_);
  failure_plan_ = plan;
}

void TrackingAllocator::release_all_live() {
  std::lock_guard lock(mutex_);
  for (auto& [data, record] : live_records_) raw_free(data, record.allocation.requested_bytes);
  live_records_.clear();
}

CpuTrackingAllocator::~CpuTrackingAllocator() { release_all_live(); }

TrackingAllocator::RawBlock CpuTrackingAllocator::raw_allocate(Bytes bytes, int) {
  // The cache rounds up to the alignment; the padding is not counted.
  void* data = cache_.allocate(static_cast<std::size_t>(bytes));
  if (data == nullptr) return {};
  reserved_ += bytes;
  return {data, bytes};
}

void CpuTrackingAllocator::raw_free(void* data, Bytes requested_bytes) {
  cache_.release(data, static_cast<std::size_t>(requested_bytes));
  reserved_ -= requested_bytes;
}

}  // namespace shardscope::exec
