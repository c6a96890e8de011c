// The `params:N` model: a parameter count and nothing else, for model-state arithmetic such as the ZeRO paper's
// (Rajbhandari et al. 2019, Figure 1). No activations, no FLOPs: plans of it show parameters, gradients,
// optimizer state and the strategy's buffers only.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/untrusted_text.h"
#include "model/model.h"

namespace shardscope {

namespace {

// 128 blocks by default: whole-parameter partitioners (ZeroRedundancyOptimizer) then balance exactly over any
// power-of-two world up to 128, as the paper's per-device figures assume, and pipelines can split up to 128 stages.
constexpr int kDefaultBlocks = 128;

// "7.5e9", "125M", "1.3B", "350K", "70b" -> a positive whole count, or -1.
std::int64_t parse_count(const std::string& text) {
  if (text.empty()) return -1;
  double scale = 1;
  std::string number = text;
  switch (text.back()) {
    case 'K': case 'k': scale = 1e3; break;
    case 'M': case 'm': scale = 1e6; break;
    case 'B': case 'b': case 'G': case 'g': scale = 1e9; break;
    case 'T': case 't': scale = 1e12; break;
    default: break;
  }
  if (scale != 1) number.pop_back();
  if (number.empty()) return -1;
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end) * scale;
  if (end != number.c_str() + number.size() || !(value >= 1) || value > 1e15) return -1;
  return static_cast<std::int64_t>(std::llround(value));
}

}  // namespace

Model build_parameter_blocks(std::int64_t parameter_count, int block_count) {
  Model model;
  for (int i = 0; i < block_count; ++i) {
    // Equal blocks; the first (count mod blocks) blocks take one element more.
    const std::int64_t numel = parameter_count / block_count + (i < parameter_count % block_count ? 1 : 0);
    Layer layer;
    layer.name = "block" + std::to_string(i);
    layer.kind = LayerKind::ParameterBlock;
    layer.params = {{"weight", numel}};
    model.layers.push_back(layer);
  }
  model.display_name = std::to_string(parameter_count) + " parameters in " + std::to_string(block_count) +
                       " blocks (model states only, no activations)";
  return model;
}

Model parse_parameter_blocks(const std::string& spec, const std::vector<std::string>& parts) {
  const std::string usage = "expected params:N[:BLOCKS], e.g. params:7.5e9, params:125M or params:1.3B:24";
  if (parts.size() < 2 || parts.size() > 3) throw ModelSpecError("model '" + printable(spec) + "': " + usage);
  const std::int64_t count = parse_count(parts[1]);
  if (count < 1) throw ModelSpecError("model '" + printable(spec) + "': '" + printable(parts[1]) + "' is not a parameter count; " + usage);
  std::int64_t blocks = std::min<std::int64_t>(kDefaultBlocks, count);
  if (parts.size() == 3) {
    char* end = nullptr;
    blocks = std::strtoll(parts[2].c_str(), &end, 10);
    if (parts[2].empty() || *end != '\0' || blocks < 1 || blocks > 100000)
      throw ModelSpecError("model '" + printable(spec) + "': BLOCKS must be a whole number between 1 and 100000; " + usage);
    if (blocks > count) throw ModelSpecError("model '" + printable(spec) + "': more blocks than parameters");
  }
  Model model = build_parameter_blocks(count, static_cast<int>(blocks));
  model.spec = spec;
  return model;
}

}  // namespace shardscope
