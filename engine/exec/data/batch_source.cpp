// Counter-based generation (SplitMix64 finaliser over seed, sample and element) so any rank can produce any
// sample without generating the ones before it, identically on every machine.
#include "exec/data/batch_source.h"
#include "exec/data/splitmix64.h"

#include <stdexcept>
#include <string>

namespace shardscope::exec {
namespace {

// Separate streams per kind of value, so a sample's target does not repeat its inputs.
enum class Stream : std::uint64_t { Inputs = 1, RegressionTargets = 2, ClassTargets = 3, Tokens = 4 };

std::uint64_t element_bits(std::uint64_t seed, std::int64_t sample, Stream stream, std::uint64_t element) {
  const std::uint64_t sample_key = splitmix64(splitmix64(seed) ^ static_cast<std::uint64_t>(sample));
  return splitmix64(splitmix64(sample_key ^ static_cast<std::uint64_t>(stream)) + element);
}

// The top 24 bits as a float in [-1, 1); every value is exact in fp32.
float uniform_minus_one_to_one(std::uint64_t bits) {
  return static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

void require(bool ok, const std::string& message) {
  if (!ok) throw std::invalid_argument(message);
}

}  // namespace

std::vector<std::int64_t> rank_sample_indices(const BatchSlice& s) {
  require(s.step >= 0, "batch slice: step must not be negative, got " + std::to_string(s.step));
  require(s.world >= 1, "batch slice: world must be at least 1, got " + std::to_string(s.world));
  require(s.rank >= 0 && s.rank < s.world,
          "batch slice: rank " + std::to_string(s.rank) + " is outside [0, " + std::to_string(s.world) + ")");
  require(s.global_batch >= s.world && s.global_batch % s.world == 0,
          "batch slice: global batch " + std::to_string(s.global_batch) + " is not a positive multiple of world " +
              std::to_string(s.world));
  const int per_rank = s.global_batch / s.world;
  std::vector<std::int64_t> indices(static_cast<std::size_t>(per_rank));
  for (int j = 0; j < per_rank; ++j) {
    indices[static_cast<std::size_t>(j)] = s.step * s.global_batch + s.rank + static_cast<std::int64_t>(s.world) * j;
  }
  return indices;
}

BatchSource::BatchSource(std::uint64_t seed, int input_features) : seed_(seed), input_features_(input_features) {
  require(input_features >= 1, "batch source: input features must be at least 1, got " + std::to_string(input_features));
}

void BatchSource::fill_inputs(std::span<const std::int64_t> samples, std::span<float> inputs) const {
  const auto width = static_cast<std::size_t>(input_features_);
  require(inputs.size() == samples.size() * width,
          "batch source: inputs hold " + std::to_string(inputs.size()) + " values, expected " +
              std::to_string(samples.size()) + " samples × " + std::to_string(width));
  for (std::size_t row = 0; row < samples.size(); ++row) {
    for (std::size_t e = 0; e < width; ++e) {
      inputs[row * width + e] = uniform_minus_one_to_one(element_bits(seed_, samples[row], Stream::Inputs, e));
    }
  }
}

void BatchSource::fill_regression_targets(std::span<const std::int64_t> samples, int target_features,
                                          std::span<float> targets) const {
  require(target_features >= 1, "batch source: target features must be at least 1");
  const auto width = static_cast<std::size_t>(target_features);
  require(targets.size() == samples.size() * width,
          "batch source: targets hold " + std::to_string(targets.size()) + " values, expected " +
              std::to_string(samples.size()) + " samples × " + std::to_string(width));
  for (std::size_t row = 0; row < samples.size(); ++row) {
    for (std::size_t e = 0; e < width; ++e) {
      targets[row * width + e] =
          uniform_minus_one_to_one(element_bits(seed_, samples[row], Stream::RegressionTargets, e));
    }
  }
}

void BatchSource::fill_class_targets(std::span<const std::int64_t> samples, int classes,
                                     std::span<std::int32_t> targets) const {
  require(classes >= 1, "batch source: classes must be at least 1");
  require(targets.size() == samples.size(), "batch source: class targets hold " + std::to_string(targets.size()) +
                                                " ids, expected " + std::to_string(samples.size()));
  for (std::size_t row = 0; row < samples.size(); ++row) {
    // Multiply-shift maps 32 random bits onto [0, classes) without a modulo's bias towards small ids.
    const std::uint64_t bits = element_bits(seed_, samples[row], Stream::ClassTargets, 0) >> 32;
    targets[row] = static_cast<std::int32_t>((bits * static_cast<std::uint64_t>(classes)) >> 32);
  }
}

void BatchSource::fill_token_sequences(std::span<const std::int64_t> samples, int seq, std::int64_t vocab,
                                       std::span<std::int64_t> ids, std::span<std::int64_t> targets) const {
  require(seq >= 1 && vocab >= 1, "batch source: token sequences need seq and vocab of at least 1");
  const std::size_t count = samples.size() * static_cast<std::size_t>(seq);
  require(ids.size() == count || ids.empty(), "batch source: ids hold " + std::to_string(ids.size()) + " values, expected " + std::to_string(count));
  require(targets.size() == count || targets.empty(),
          "batch source: targets hold " + std::to_string(targets.size()) + " values, expected " + std::to_string(count));
  const auto v = static_cast<std::uint64_t>(vocab);
  for (std::size_t row = 0; row < samples.size(); ++row) {
    const std::uint64_t start = ((element_bits(seed_, samples[row], Stream::Tokens, 0) >> 32) * v) >> 32;
    const std::uint64_t stride = 1 + (((element_bits(seed_, samples[row], Stream::Tokens, 1) >> 32) * 8) >> 32);
    for (int j = 0; j < seq; ++j) {
      const std::size_t at = row * static_cast<std::size_t>(seq) + static_cast<std::size_t>(j);
      if (!ids.empty()) ids[at] = static_cast<std::int64_t>((start + static_cast<std::uint64_t>(j) * stride) % v);
      if (!targets.empty()) targets[at] = static_cast<std::int64_t>((start + static_cast<std::uint64_t>(j + 1) * stride) % v);
    }
  }
}

}  // namespace shardscope::exec
