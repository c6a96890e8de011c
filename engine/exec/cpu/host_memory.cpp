// available_host_memory: the "MemAvailable: N kB" line of /proc/meminfo. HostBlockCache: exact-size reuse of
// freed aligned blocks, bounded by the peak of live bytes.
#include "exec/cpu/host_memory.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace shardscope::exec {

std::optional<Bytes> available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    Bytes kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

HostBlockCache::~HostBlockCache() { trim(); }

void* HostBlockCache::allocate(std::size_t bytes) {
  const std::size_t size = rounded(bytes);
  void* data = nullptr;
  if (const auto hit = cached_blocks_.find(size); hit != cached_blocks_.end()) {
    data = hit->second;
    cached_blocks_.erase(hit);
    cached_ -= size;
  } else {
    evict_for(size);
    // std::aligned_alloc wants a size that is a multiple of the alignment.
    data = std::aligned_alloc(alignment_, size);
    if (data == nullptr && !cached_blocks_.empty()) {
      trim();
      data = std::aligned_alloc(alignment_, size);
    }
    if (data == nullptr) return nullptr;
  }
  live_ += size;
  peak_live_ = std::max(peak_live_, live_);
  return data;
}

void HostBlockCache::release(void* data, std::size_t bytes) {
  const std::size_t size = rounded(bytes);
  live_ -= size;
  cached_blocks_.emplace(size, data);
  cached_ += size;  // live + cached is unchanged, so still within the bound
}

void HostBlockCache::trim() {
  while (!cached_blocks_.empty()) free_cached(cached_blocks_.begin());
}

void HostBlockCache::evict_for(std::size_t incoming) {
  const std::size_t bound = std::max(peak_live_, live_ + incoming);
  while (!cached_blocks_.empty() && live_ + cached_ + incoming > bound) {
    const std::size_t excess = live_ + cached_ + incoming - bound;
    // The smallest block that removes the whole excess at once, else the largest (fewest blocks freed).
    auto victim = cached_blocks_.lower_bound(excess);
    if (victim == cached_blocks_.end()) victim = std::prev(cached_blocks_.end());
    free_cached(victim);
  }
}

void HostBlockCache::free_cached(std::multimap<std::size_t, void*>::iterator block) {
  std::free(block->second);
  cached_ -= block->first;
  cached_blocks_.erase(block);
}

}  // namespace shardscope::exec
