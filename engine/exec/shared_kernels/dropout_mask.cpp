// splitmix64 over (key, site, element): 24-bit uniforms compared with p.
#include "exec/shared_kernels/dropout_mask.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "exec/data/splitmix64.h"
#include "exec/shared_kernels/kept_or_zero.h"

namespace shardscope::exec {

std::uint64_t dropout_key(std::uint64_t seed, int step, int layer) {
  std::uint64_t key = splitmix64(seed ^ 0x64726f706f7574ull);  // "dropout"
  for (const int part : {step, layer}) key = splitmix64(key ^ static_cast<std::uint32_t>(part));
  return key;
}

void fill_keep_mask(std::uint64_t key, int site, double p, std::int64_t first, std::span<std::uint8_t> mask) {
  const std::uint64_t site_key = keep_mask_site_key(key, site);
  const std::uint64_t threshold = keep_mask_threshold(p);
  for (std::size_t i = 0; i < mask.size(); ++i) {
    const std::uint64_t unit = splitmix64(site_key + static_cast<std::uint64_t>(first) + i) >> 40;
    mask[i] = unit >= threshold ? 1 : 0;
  }
}

void fill_pass_keep_mask(std::uint64_t key, int site, double p, GlobalSamples samples, int rows, std::span<std::uint8_t> mask,
                         int part, int parts) {
  if (rows <= 0 || mask.size() % static_cast<std::size_t>(rows) != 0)
    throw std::invalid_argument("dropout mask of " + std::to_string(mask.size()) + " elements is not " + std::to_string(rows) +
                                " samples' worth");
  if (parts <= 0 || part < 0 || part >= parts)
    throw std::invalid_argument("dropout mask part " + std::to_string(part) + " of " + std::to_string(parts));
  const auto per_sample = static_cast<std::int64_t>(mask.size() / static_cast<std::size_t>(rows));
  const std::int64_t whole_per_sample = per_sample * parts;
  for (int s = 0; s < rows; ++s)
    fill_keep_mask(key, site, p, whole_batch_element(samples, s * whole_per_sample, whole_per_sample) + part * per_sample,
                   mask.subspan(static_cast<std::size_t>(s * per_sample), static_cast<std::size_t>(per_sample)));
}

void fill_pass_keep_mask_range(std::uint64_t key, int site, double p, GlobalSamples samples, std::int64_t per_sample,
                               std::int64_t first, std::span<std::uint8_t> mask) {
  if (per_sample <= 0 || first < 0) throw std::invalid_argument("dropout mask range: bad sample size or start");
  std::size_t done = 0;
  while (done < mask.size()) {  // one run per sample the range crosses
    const std::int64_t at = first + static_cast<std::int64_t>(done);
    const auto run = std::min(mask.size() - done, static_cast<std::size_t>(per_sample - at % per_sample));
    fill_keep_mask(key, site, p, whole_batch_element(samples, at, per_sample), mask.subspan(done, run));
    done += run;
  }
}

void apply_keep_mask(std::span<float> x, std::span<const std::uint8_t> mask, double p) {
  apply_keep_mask(std::span<const float>(x), mask.data(), p, x.data());
}

void apply_keep_mask(std::span<const float> x, const std::uint8_t* mask, double p, float* out) {
  const float scale = keep_scale(p);
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = kept_or_zero(mask[i] != 0, x[i] * scale);
}

}  // namespace shardscope::exec
