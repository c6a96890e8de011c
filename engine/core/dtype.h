// The element type a model trains in: fp32, or a 16-bit type with mixed precision. One enum so that no file
// compares the string "fp32". Depends on nothing but the standard library.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.h"

namespace shardscope {

enum class Dtype { Fp32, Fp16, Bf16 };

std::string dtype_name(Dtype dtype);                          // "fp32", "fp16", "bf16"
std::optional<Dtype> parse_dtype(std::string_view text);      // nullopt for anything else
std::vector<std::string> dtype_names();                       // in enum order
// Bytes of one element of parameters, gradients and activations in this dtype (4 or 2).
Bytes dtype_bytes(Dtype dtype);
// fp16 / bf16 train with mixed precision: 16-bit parameters and gradients, fp32 master weights and optimizer state.
inline bool is_mixed_precision(Dtype dtype) { return dtype != Dtype::Fp32; }

}  // namespace shardscope
