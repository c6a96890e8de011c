// The element type of a plan tensor, for executors: what its bytes hold. Under mixed precision the parameters,
// gradients and activations are 16-bit while master weights, optimizer state, losses and regression targets stay
// fp32; token ids, dropout masks and library workspaces are opaque bytes no kernel converts. The accounting and
// the simulator read only bytes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"

namespace shardscope {

enum class ElementType : std::uint8_t { Fp32, Bf16, Fp16, Opaque };

inline ElementType element_type_of(Dtype dtype) {
  switch (dtype) {
    case Dtype::Bf16: return ElementType::Bf16;
    case Dtype::Fp16: return ElementType::Fp16;
    case Dtype::Fp32: break;
  }
  return ElementType::Fp32;
}

// The dtype whose values an element type holds (element_type_of's inverse); none for opaque bytes.
inline std::optional<Dtype> dtype_of(ElementType element) {
  switch (element) {
    case ElementType::Fp32: return Dtype::Fp32;
    case ElementType::Bf16: return Dtype::Bf16;
    case ElementType::Fp16: return Dtype::Fp16;
    case ElementType::Opaque: break;
  }
  return std::nullopt;
}

inline bool is_16_bit(ElementType element) { return element == ElementType::Bf16 || element == ElementType::Fp16; }

// Bytes of one element; opaque tensors count in bytes.
inline Bytes element_bytes(ElementType element) {
  return element == ElementType::Fp32 ? 4 : is_16_bit(element) ? 2 : 1;
}

inline std::string element_type_name(ElementType element) {
  switch (element) {
    case ElementType::Fp32: return "fp32";
    case ElementType::Bf16: return "bf16";
    case ElementType::Fp16: return "fp16";
    case ElementType::Opaque: break;
  }
  return "bytes";
}

}  // namespace shardscope
