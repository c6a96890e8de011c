// How a flat buffer of `count` elements splits into `parts` ring chunks: the first count % parts chunks hold one
// element more (as torch.tensor_split / numpy.array_split). Shared by the CPU collectives and their callers.
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>

namespace shardscope::exec {

struct ChunkRange {
  std::size_t begin = 0;
  std::size_t size = 0;
  std::size_t end() const { return begin + size; }
};

// Chunk `index` (0 <= index < parts) of a buffer of `count` elements.
constexpr ChunkRange chunk_range(std::size_t count, int parts, int index) {
  const auto p = static_cast<std::size_t>(parts);
  const auto i = static_cast<std::size_t>(index);
  const std::size_t base = count / p;
  const std::size_t larger = count % p;  // this many chunks get base + 1
  const std::size_t begin = i * base + (i < larger ? i : larger);
  return {begin, base + (i < larger ? 1 : 0)};
}

}  // namespace shardscope::exec
