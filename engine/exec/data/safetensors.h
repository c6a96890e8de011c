// Reading and writing the Hugging Face safetensors format, so that an executed run's parameters can be loaded from
// and saved to the files PyTorch and transformers use. Written from the format's specification, no third-party
// library: 8 bytes little-endian header size N, N bytes of JSON header (tensor name -> dtype, shape, data_offsets;
// optional "__metadata__" of strings, spaces padding the end), then the tensors' raw little-endian row-major bytes.
// The reader treats every file as untrusted: it checks the header the way the reference validator does (offsets
// inside the buffer, sizes equal numel × dtype size, ranges covering the buffer without gap or overlap, no name
// twice) before it allocates anything sized by the file.
// Usage:
//   write_safetensors("model.safetensors", {{"w", {2, 3}, values}}, {{"format", "pt"}});  // throws SafetensorsError
//   for (const SafetensorsTensor& t : read_safetensors("model.safetensors")) use(t.name, t.shape, t.values);
#pragma once
#include "exec/exec_layer.h"
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardscope::exec {

// The reference implementation refuses larger headers; so do we (the header is parsed into memory whole).
constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsTensor {
  std::string name;                  // "transformer.h.0.attn.c_attn.weight"
  std::vector<std::int64_t> shape;   // row-major; [] is a scalar (1 element)
  std::vector<float> values;         // numel(shape) values
};

// Messages are complete: "PATH: tensor \"w\": data_offsets [0, 12] hold 12 bytes; shape [2, 3] of F32 needs 24".
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes F32 tensors in the given order, header padded with spaces to 8-byte alignment, optional __metadata__.
// Writes to PATH.tmp-<pid> then renames, so a failed write never leaves a half file under PATH; throws
// SafetensorsError naming the path and the OS error. Also refuses (before creating any file) a tensor whose
// values do not match its shape, a negative dimension, a name given twice or named "__metadata__", and names or
// metadata that are not valid UTF-8.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Reads every tensor (F32 as is; F16 and BF16 converted to float exactly; F64 rounded to the nearest float; any
// other dtype refused), in the order of their data offsets. Throws SafetensorsError naming the file and the problem
// (and the tensor, where one is at fault).
std::vector<SafetensorsTensor> read_safetensors(const std::string& path);

// The same from bytes in memory (`source` names them in messages); read_safetensors reads the file and calls it.
std::vector<SafetensorsTensor> parse_safetensors(std::span<const std::byte> bytes, const std::string& source);

}  // namespace shardscope::exec
