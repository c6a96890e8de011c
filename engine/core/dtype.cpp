// Dtype names and sizes.
#include "core/dtype.h"

#include <array>
#include <utility>

namespace shardscope {

namespace {
constexpr std::array<std::pair<Dtype, std::string_view>, 3> kDtypes = {
    {{Dtype::Fp32, "fp32"}, {Dtype::Fp16, "fp16"}, {Dtype::Bf16, "bf16"}}};
}  // namespace

std::string dtype_name(Dtype dtype) {
  for (const auto& [value, name] : kDtypes)
    if (value == dtype) return std::string(name);
  return "?";
}

std::optional<Dtype> parse_dtype(std::string_view text) {
  for (const auto& [value, name] : kDtypes)
    if (name == text) return value;
  return std::nullopt;
}

std::vector<std::string> dtype_names() {
  std::vector<std::string> names;
  for (const auto& entry : kDtypes) names.emplace_back(entry.second);
  return names;
}

Bytes dtype_bytes(Dtype dtype) { return dtype == Dtype::Fp32 ? 4 : 2; }

}  // namespace shardscope
