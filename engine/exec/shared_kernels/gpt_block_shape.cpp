// GPT-2 block sizes, checked once for both backends.
#include "exec/shared_kernels/gpt_block_shape.h"

#include <stdexcept>
#include <string>
#include <string_view>

namespace shardscope::exec {

namespace {

void require_positive(long long value, std::string_view what) {
  if (value <= 0) throw std::invalid_argument("gpt_block: " + std::string(what) + " must be positive, got " + std::to_string(value));
}

}  // namespace

GptBlockDims gpt_block_dims(const GptBlockShape& shape) {
  require_positive(shape.rows, "rows");
  require_positive(shape.seq, "seq");
  require_positive(shape.hidden, "hidden");
  require_positive(shape.heads, "heads");
  require_positive(shape.inner, "inner");
  require_positive(shape.tp, "tp");
  if (shape.hidden % shape.heads != 0) throw std::invalid_argument("gpt_block: heads must divide hidden");
  if (shape.heads % shape.tp != 0 || shape.inner % shape.tp != 0)
    throw std::invalid_argument("gpt_block: tp " + std::to_string(shape.tp) + " must divide the heads (" +
                                std::to_string(shape.heads) + ") and the inner width (" + std::to_string(shape.inner) + ")");
  GptBlockDims d;
  d.b = shape.rows;
  d.s = shape.seq;
  d.n = shape.rows * shape.seq;
  d.h = shape.hidden;
  d.i = shape.inner / shape.tp;
  d.a = shape.heads / shape.tp;
  d.d = shape.hidden / shape.heads;
  d.w = d.a * d.d;
  if (shape.sequence_parallel && d.n % shape.tp != 0)
    throw std::invalid_argument("gpt_block: tp " + std::to_string(shape.tp) + " must divide the pass's " +
                                std::to_string(d.n) + " tokens to split them");
  d.local = shape.sequence_parallel ? d.n / shape.tp : d.n;
  d.nh = static_cast<std::size_t>(d.n) * static_cast<std::size_t>(d.h);
  d.ni = static_cast<std::size_t>(d.n) * static_cast<std::size_t>(d.i);
  d.nw = static_cast<std::size_t>(d.n) * static_cast<std::size_t>(d.w);
  d.scores = static_cast<std::size_t>(d.b) * static_cast<std::size_t>(d.a) * static_cast<std::size_t>(d.s) * static_cast<std::size_t>(d.s);
  return d;
}

GptBlockShape gpt_block_shape(const TransformerConfig& c, int rows, int seq, bool training, std::uint64_t key,
                              GlobalSamples samples) {
  GptBlockShape s;
  s.rows = rows;
  s.seq = seq;
  s.hidden = static_cast<int>(c.hidden);
  s.heads = c.heads;
  s.inner = static_cast<int>(c.intermediate);
  s.eps = static_cast<float>(c.layer_norm_epsilon);
  s.attn_dropout = training ? c.attn_pdrop : 0.0;
  s.resid_dropout = training ? c.resid_pdrop : 0.0;
  s.dropout_key = key;
  s.samples = samples;
  return s;
}

}  // namespace shardscope::exec
