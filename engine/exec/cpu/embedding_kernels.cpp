// Embedding lookups and their scatter-add backward.
#include "exec/cpu/embedding_kernels.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/shared_kernels/dropout_mask.h"
#include "exec/cpu/span_checks.h"

namespace shardscope::exec::cpu {

namespace {

std::size_t token_count(const EmbeddingShape& s, std::size_t ids, const char* kernel) {
  require_positive(s.rows, kernel, "rows");
  require_positive(s.seq, kernel, "seq");
  require_positive(s.hidden, kernel, "hidden");
  if (s.seq > s.positions)
    throw std::invalid_argument(std::string(kernel) + ": sequence " + std::to_string(s.seq) + " exceeds " +
                                std::to_string(s.positions) + " positions");
  const auto tokens = static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.seq);
  if (ids != tokens)
    throw std::invalid_argument(std::string(kernel) + ": ids has " + std::to_string(ids) + " elements, expected " +
                                std::to_string(tokens));
  return tokens;
}

void check_tables(const EmbeddingShape& s, std::size_t wte, std::size_t wpe, const char* kernel) {
  const auto h = static_cast<std::size_t>(s.hidden);
  if (wte != static_cast<std::size_t>(s.vocab) * h || wpe != static_cast<std::size_t>(s.positions) * h)
    throw std::invalid_argument(std::string(kernel) + ": wte has " + std::to_string(wte) + " elements and wpe " +
                                std::to_string(wpe) + ", expected vocab × hidden and positions × hidden");
}

// The row of wte holding `id` on this rank, or −1 when another rank holds it. Throws on an id outside the whole
// vocabulary.
std::int64_t table_row(const EmbeddingShape& s, std::int64_t id, std::size_t token, const char* kernel) {
  const std::int64_t whole = s.whole_vocab > 0 ? s.whole_vocab : s.vocab;
  if (id < 0 || id >= whole)
    throw std::invalid_argument(std::string(kernel) + ": token id " + std::to_string(id) + " at position " +
                                std::to_string(token) + " is outside the vocabulary [0, " + std::to_string(whole) + ")");
  const std::int64_t row = id - s.first_id;
  return row >= 0 && row < s.vocab ? row : -1;
}

// The pass's whole mask (`elements`), where the mask operand holds only chunk mask_part.index of it (`part` bytes).
std::vector<std::uint8_t> whole_mask(const EmbeddingShape& s, std::size_t elements, std::size_t part, const char* kernel) {
  if (part * static_cast<std::size_t>(s.mask_part.count) != elements)
    throw std::invalid_argument(std::string(kernel) + ": mask holds " + std::to_string(part) + " bytes, not 1/" +
                                std::to_string(s.mask_part.count) + " of " + std::to_string(elements));
  std::vector<std::uint8_t> whole(elements);
  fill_pass_keep_mask(s.dropout_key, kEmbeddingDropoutSite, s.dropout, s.samples, s.rows, whole);
  return whole;
}

}  // namespace

void embedding_forward(const EmbeddingShape& s, std::span<const std::int64_t> ids, std::span<const float> wte,
                       std::span<const float> wpe, std::span<std::uint8_t> mask, std::span<float> output) {
  const char* kernel = "embedding_forward";
  const std::size_t tokens = token_count(s, ids.size(), kernel);
  check_tables(s, wte.size(), wpe.size(), kernel);
  const auto h = static_cast<std::size_t>(s.hidden);
  require_size(output, tokens * h, kernel, "output");
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::int64_t row = table_row(s, ids[t], t, kernel);
    const float* position = wpe.data() + (t % static_cast<std::size_t>(s.seq)) * h;
    float* out = output.data() + t * h;
    if (row < 0) std::fill(out, out + h, 0.0f);
    else std::copy_n(wte.data() + static_cast<std::size_t>(row) * h, h, out);
    if (s.adds_positions)
      for (std::size_t j = 0; j < h; ++j) out[j] += position[j];
  }
  if (mask.empty()) {
    if (s.dropout > 0) throw std::invalid_argument(std::string(kernel) + ": dropout needs a mask operand");
    return;
  }
  if (s.mask_part.count == 1) {
    require_size(mask, output.size(), kernel, "mask");
    fill_pass_keep_mask(s.dropout_key, kEmbeddingDropoutSite, s.dropout, s.samples, s.rows, mask);
    apply_keep_mask(output, mask, s.dropout);
    return;
  }
  const std::vector<std::uint8_t> whole = whole_mask(s, output.size(), mask.size(), kernel);
  apply_keep_mask(output, whole, s.dropout);
  std::copy_n(whole.begin() + static_cast<std::ptrdiff_t>(mask.size()) * s.mask_part.index, mask.size(), mask.begin());
}

void embedding_backward(const EmbeddingShape& s, std::span<const float> grad_out, std::span<const std::int64_t> ids,
                        std::span<const std::uint8_t> mask, std::span<float> grad_wte, std::span<float> grad_wpe) {
  const char* kernel = "embedding_backward";
  const std::size_t tokens = token_count(s, ids.size(), kernel);
  check_tables(s, grad_wte.size(), grad_wpe.size(), kernel);
  const auto h = static_cast<std::size_t>(s.hidden);
  require_size(grad_out, tokens * h, kernel, "grad_out");
  std::vector<std::uint8_t> drawn;  // sequence parallelism: the whole mask again (the operand holds a chunk)
  if (!mask.empty() && s.mask_part.count > 1) {
    drawn = whole_mask(s, grad_out.size(), mask.size(), kernel);
    mask = drawn;
  }
  if (!mask.empty()) require_size(mask, grad_out.size(), kernel, "mask");
  std::fill(grad_wte.begin(), grad_wte.end(), 0.0f);
  std::fill(grad_wpe.begin(), grad_wpe.end(), 0.0f);
  const float scale = keep_scale(s.dropout);
  std::vector<float> row(h);
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::int64_t table = table_row(s, ids[t], t, kernel);
    const float* g = grad_out.data() + t * h;
    for (std::size_t j = 0; j < h; ++j) row[j] = mask.empty() ? g[j] : (mask[t * h + j] ? g[j] * scale : 0.0f);
    float* position = grad_wpe.data() + (t % static_cast<std::size_t>(s.seq)) * h;
    for (std::size_t j = 0; j < h; ++j) position[j] += row[j];
    if (table < 0) continue;
    float* token = grad_wte.data() + static_cast<std::size_t>(table) * h;
    for (std::size_t j = 0; j < h; ++j) token[j] += row[j];
  }
}

}  // namespace shardscope::exec::cpu
