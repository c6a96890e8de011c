// The allocator interface every executor allocates tensors through: per-category live and peak bytes, alloc/free
// events for the trace, injectable failures. Backend-neutral (a CUDA caching allocator implements it later);
// depends on core/ only, and the host allocator below on the CPU backend's block cache (exec/cpu/host_memory.h).
#pragma once
#include "exec/exec_layer.h"
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/category.h"
#include "core/units.h"
#include "exec/cpu/host_memory.h"

namespace shardscope::exec {

// One live allocation. `counted_bytes` is what the accounting adds (the exact request on the CPU; a CUDA caching
// allocator may count its rounded block instead).
struct Allocation {
  void* data = nullptr;
  Bytes requested_bytes = 0;
  Bytes counted_bytes = 0;
  Category category = Category::Temporaries;
  std::uint64_t id = 0;  // 1, 2, 3 ... in allocation order
};

enum class AllocationEventKind { Alloc, Free };

// What the listener sees; the executor turns these into TraceEvents. Totals are after the event.
struct AllocationEvent {
  AllocationEventKind kind = AllocationEventKind::Alloc;
  std::uint64_t id = 0;
  std::string_view name;
  Category category = Category::Temporaries;
  Bytes counted_bytes = 0;
  Bytes live_after = 0;      // all categories
  Bytes reserved_after = 0;  // what the backend holds (equal to live on the CPU)
};

// When to refuse an allocation on purpose, to exercise the executor's failure path. Both may be set.
struct AllocationFailurePlan {
  std::optional<std::uint64_t> fail_nth_allocation{};  // 1-based: the Nth allocate() call fails
  std::optional<Bytes> budget_bytes{};                // an allocation that would take live bytes above it fails
  std::string budget_name = "budget";                 // what the message calls it ("H100-80 capacity")
};

// Thrown when an allocation is refused (injected, over budget, or the backend ran out). The message names the
// tensor, its category, the requested bytes and what is live per category.
class OutOfMemoryError : public std::runtime_error {
 public:
  OutOfMemoryError(std::string message, std::string tensor_name, Category category, Bytes requested_bytes,
                   CategoryBytes live)
      : std::runtime_error(std::move(message)),
        tensor_name_(std::move(tensor_name)),
        category_(category),
        requested_bytes_(requested_bytes),
        live_(live) {}
  const std::string& tensor_name() const { return tensor_name_; }
  Category category() const { return category_; }
  Bytes requested_bytes() const { return requested_bytes_; }
  const CategoryBytes& live() const { return live_; }

 private:
  std::string tensor_name_;
  Category category_;
  Bytes requested_bytes_;
  CategoryBytes live_;
};

// Thread contract: every public member may be called from several threads at once (one allocator per rank is the
// expected use, so the lock is uncontended). The listener runs under the allocator's lock, in event order; it must
// not call back into the allocator.
class TrackingAllocator {
 public:
  using Listener = std::function<void(const AllocationEvent&)>;

  virtual ~TrackingAllocator() = default;
  TrackingAllocator() = default;
  TrackingAllocator(const TrackingAllocator&) = delete;
  TrackingAllocator& operator=(const TrackingAllocator&) = delete;

  // A block of at least `bytes` (> 0), or OutOfMemoryError. `name` appears in events and errors. `stream`: the
  // stream PyTorch would allocate it on (TensorInfo::alloc_stream), the pool key of a caching allocator.
  Allocation allocate(Bytes bytes, Category category, std::string_view name, int stream = 0);
  // Frees a pointer returned by allocate(); std::invalid_argument for anything else (double free included).
  // `completes_late`: the backend may keep the block out of its cache until complete_late_frees()
  // (TensorInfo::free_completes_late): the CUDA caching allocator does, host memory frees at once. The live count
  // drops here either way, as memory_allocated does.
  void free(void* data, bool completes_late = false);
  void complete_late_frees();

  CategoryBytes live_bytes() const;
  Bytes live_total_bytes() const;
  // Per category: the most that category ever held. Total: the most all categories held at one moment (so the
  // per-category peaks may sum to more than the total peak).
  CategoryBytes peak_bytes() const;
  Bytes peak_total_bytes() const;
  std::size_t live_allocation_count() const;
  // Forgets the peaks (e.g. at a step boundary): they restart from what is live now.
  void reset_peaks();

  void set_listener(Listener listener);
  void set_failure_plan(AllocationFailurePlan plan);

 protected:
  struct RawBlock {
    void* data = nullptr;  // nullptr: the backend has no room
    Bytes counted_bytes = 0;
  };
  virtual RawBlock raw_allocate(Bytes bytes, int stream) = 0;
  virtual void raw_free(void* data, Bytes requested_bytes) = 0;
  // The first half of a free whose block returns to the cache at raw_complete_late_frees() (default: at once).
  virtual void raw_free_late(void* data, Bytes requested_bytes) { raw_free(data, requested_bytes); }
  virtual void raw_complete_late_frees() {}
  // What the backend holds, cached blocks included; called under the lock.
  virtual Bytes reserved_bytes_locked() const = 0;
  // For a derived destructor: hands every block still live back to the backend (no events).
  void release_all_live();

 private:
  struct LiveRecord {
    Allocation allocation;
    std::string name;
  };
  [[noreturn]] void throw_out_of_memory_locked(std::string_view reason, std::string_view name, Category category,
                                               Bytes bytes) const;

  mutable std::mutex mutex_;
  std::unordered_map<void*, LiveRecord> live_records_;
  CategoryBytes live_{}, peak_{};
  Bytes live_total_ = 0, peak_total_ = 0;
  std::uint64_t allocation_calls_ = 0;
  std::uint64_t next_id_ = 1;
  AllocationFailurePlan failure_plan_;
  Listener listener_;
};

// Host memory, 64-byte aligned (a cache line; AVX-512 loads), counting exactly the bytes requested. Freed blocks go
// to a HostBlockCache and come back for the next request of their size (no page faults a step later); the cache is
// below the accounting: live, peak and reserved bytes are the exact requests, as the plan predicts them.
class CpuTrackingAllocator final : public TrackingAllocator {
 public:
  static constexpr Bytes kAlignmentBytes = 64;
  ~CpuTrackingAllocator() override;

 protected:
  RawBlock raw_allocate(Bytes bytes, int stream) override;  // one pool: the host has no streams
  void raw_free(void* data, Bytes requested_bytes) override;
  Bytes reserved_bytes_locked() const override { return reserved_; }

 private:
  Bytes reserved_ = 0;  // guarded by the base class's lock (raw_* are called under it), as is the cache
  HostBlockCache cache_{static_cast<std::size_t>(kAlignmentBytes)};
};

}  // namespace shardscope::exec
