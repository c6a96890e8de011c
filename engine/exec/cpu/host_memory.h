// Host memory for the CPU backend: how much the machine has (MemAvailable, so a plan whose ranks together need more
// is refused before it starts, instead of being killed half-way), and a cache of freed blocks so a training step
// reuses the memory the previous step faulted in.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <map>
#include <optional>

#include "core/units.h"

namespace shardscope::exec {

// MemAvailable in bytes; none where /proc/meminfo cannot be read (then nothing is refused).
std::optional<Bytes> available_host_memory();

// Freed host blocks kept for reuse, for one allocator (one rank). Why: glibc hands big blocks back to the kernel
// (munmap) when they are freed, so a step that frees and re-allocates its gradients and temporaries page-faults and
// zero-fills every 4 KiB page again; kept here, a block of the same size is handed out again already in memory.
// Only a block of exactly the requested size (rounded up to the alignment) is reused, so no byte is wasted inside a
// block. Bound: live plus cached never exceeds the most that was live at once (or live plus the request at hand, if
// more), so the process never holds more than it would without the cache at its peak; a request that would cross
// that bound first frees cached blocks. Not thread-safe: the owner's lock guards it (TrackingAllocator calls its
// raw_allocate / raw_free under its lock).
class HostBlockCache {
 public:
  explicit HostBlockCache(std::size_t alignment) : alignment_(alignment) {}
  ~HostBlockCache();  // frees the cached blocks; live ones are the owner's to release first
  HostBlockCache(const HostBlockCache&) = delete;
  HostBlockCache& operator=(const HostBlockCache&) = delete;

  // A block of at least `bytes` (> 0), aligned; nullptr when the system has no memory even after the cache is
  // emptied.
  void* allocate(std::size_t bytes);
  // Takes back a block from allocate(); `bytes` as passed to it.
  void release(void* data, std::size_t bytes);
  // Hands every cached block back to the system.
  void trim();

  std::size_t live_bytes() const { return live_; }      // rounded sizes of the blocks handed out
  std::size_t cached_bytes() const { return cached_; }  // rounded sizes of the blocks kept

 private:
  std::size_t rounded(std::size_t bytes) const { return (bytes + alignment_ - 1) / alignment_ * alignment_; }
  // Frees cached blocks until live + cached + incoming fits the bound.
  void evict_for(std::size_t incoming);
  void free_cached(std::multimap<std::size_t, void*>::iterator block);

  std::size_t alignment_;
  std::multimap<std::size_t, void*> cached_blocks_;  // rounded size -> block
  std::size_t live_ = 0, cached_ = 0, peak_live_ = 0;
};

}  // namespace shardscope::exec
