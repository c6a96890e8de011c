// libFuzzer target: safetensors bytes through parse_safetensors (the parameter files an executed run loads). The
// header size, JSON and offsets are untrusted: a bad file must give SafetensorsError; nothing else may escape,
// crash, trip ASan / UBSan or allocate more than the input justifies. Seeds: tests/fuzz/safetensors_seeds/.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "exec/data/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope::exec;
  try {
    const std::vector<SafetensorsTensor> tensors =
        parse_safetensors(std::span(reinterpret_cast<const std::byte*>(data), size), "fuzz.safetensors");
    for (const SafetensorsTensor& tensor : tensors) {
      std::size_t numel = 1;
      for (const std::int64_t dim : tensor.shape) numel *= static_cast<std::size_t>(dim);
      if (numel != tensor.values.size()) __builtin_trap();  // the reader's promise: numel(shape) values
    }
  } catch (const SafetensorsError&) {
  }
  return 0;
}
