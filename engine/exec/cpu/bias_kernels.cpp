// bias_add / bias_backward: plain loops over whole rows (bias_kernels.h).
#include "exec/cpu/bias_kernels.h"

#include <stdexcept>
#include <string>

#include "exec/cpu/span_checks.h"

namespace shardscope::exec::cpu {
namespace {

std::size_t rows_of(std::size_t elements, std::size_t width, const char* kernel, const char* what) {
  if (width == 0 || elements % width != 0)
    throw std::invalid_argument(std::string(kernel) + ": " + what + " holds " + std::to_string(elements) +
                                " elements, not whole rows of the bias's " + std::to_string(width));
  return elements / width;
}

}  // namespace

void bias_add(std::span<const float> input, std::span<const float> bias, std::span<float> output) {
  constexpr const char* kKernel = "bias_add";
  const std::size_t rows = rows_of(input.size(), bias.size(), kKernel, "input");
  require_size(output, input.size(), kKernel, "output");
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < bias.size(); ++o) output[r * bias.size() + o] = input[r * bias.size() + o] + bias[o];
}

void bias_backward(std::span<const float> grad_out, std::span<float> grad_bias) {
  constexpr const char* kKernel = "bias_backward";
  const std::size_t rows = rows_of(grad_out.size(), grad_bias.size(), kKernel, "grad_out");
  require_no_overlap(grad_bias, grad_out, kKernel, "grad_bias", "grad_out");
  // Row by row, so the sum over the rows runs in a fixed order and the memory access stays sequential (nn.Linear's
  // bias gradient, linear_backward_bias, is this sum too).
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t o = 0; o < grad_bias.size(); ++o) grad_bias[o] += grad_out[r * grad_bias.size() + o];
}

}  // namespace shardscope::exec::cpu
