// nn.Linear forward and backward through gemm_f32; the bias terms are plain loops.
#include "exec/cpu/linear_kernels.h"

#include <algorithm>

#include "exec/cpu/bias_kernels.h"
#include "exec/cpu/blas_gemm.h"
#include "exec/cpu/span_checks.h"

namespace shardscope::exec::cpu {
namespace {

std::size_t elements(int rows, int cols) { return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols); }

void check_shape(const LinearShape& s, const char* kernel) {
  require_positive(s.batch, kernel, "batch");
  require_positive(s.in_features, kernel, "in_features");
  require_positive(s.out_features, kernel, "out_features");
}

}  // namespace

void linear_forward(const LinearShape& s, std::span<const float> x, std::span<const float> weight,
                    std::span<const float> bias, std::span<float> y) {
  constexpr const char* kKernel = "linear_forward";
  check_shape(s, kKernel);
  require_size(x, elements(s.batch, s.in_features), kKernel, "x");
  require_size(weight, elements(s.out_features, s.in_features), kKernel, "weight");
  if (!bias.empty()) require_size(bias, static_cast<std::size_t>(s.out_features), kKernel, "bias");
  require_size(y, elements(s.batch, s.out_features), kKernel, "y");
  require_no_overlap(y, x, kKernel, "y", "x");
  require_no_overlap(y, weight, kKernel, "y", "weight");
  require_no_overlap(y, bias, kKernel, "y", "bias");
  // Seed y with the bias rows and let the GEMM add x·Wᵀ (beta = 1), as torch.addmm does.
  float beta = 0.0f;
  if (!bias.empty()) {
    for (int row = 0; row < s.batch; ++row) std::copy(bias.begin(), bias.end(), y.begin() + row * s.out_features);
    beta = 1.0f;
  }
  gemm_f32(Transpose::No, Transpose::Yes, s.batch, s.out_features, s.in_features, 1.0f, x.data(), weight.data(), beta,
           y.data());
}

void linear_backward_input(const LinearShape& s, std::span<const float> grad_y, std::span<const float> weight,
                           std::span<float> grad_x) {
  constexpr const char* kKernel = "linear_backward_input";
  check_shape(s, kKernel);
  require_size(grad_y, elements(s.batch, s.out_features), kKernel, "grad_y");
  require_size(weight, elements(s.out_features, s.in_features), kKernel, "weight");
  require_size(grad_x, elements(s.batch, s.in_features), kKernel, "grad_x");
  require_no_overlap(grad_x, grad_y, kKernel, "grad_x", "grad_y");
  require_no_overlap(grad_x, weight, kKernel, "grad_x", "weight");
  gemm_f32(Transpose::No, Transpose::No, s.batch, s.in_features, s.out_features, 1.0f, grad_y.data(), weight.data(),
           0.0f, grad_x.data());
}

void linear_backward_weight(const LinearShape& s, std::span<const float> grad_y, std::span<const float> x,
                            std::span<float> grad_weight) {
  constexpr const char* kKernel = "linear_backward_weight";
  check_shape(s, kKernel);
  require_size(grad_y, elements(s.batch, s.out_features), kKernel, "grad_y");
  require_size(x, elements(s.batch, s.in_features), kKernel, "x");
  require_size(grad_weight, elements(s.out_features, s.in_features), kKernel, "grad_weight");
  require_no_overlap(grad_weight, grad_y, kKernel, "grad_weight", "grad_y");
  require_no_overlap(grad_weight, x, kKernel, "grad_weight", "x");
  gemm_f32(Transpose::Yes, Transpose::No, s.out_features, s.in_features, s.batch, 1.0f, grad_y.data(), x.data(), 1.0f,
           grad_weight.data());
}

void linear_backward_bias(const LinearShape& s, std::span<const float> grad_y, std::span<float> grad_bias) {
  constexpr const char* kKernel = "linear_backward_bias";
  check_shape(s, kKernel);
  require_size(grad_y, elements(s.batch, s.out_features), kKernel, "grad_y");
  require_size(grad_bias, static_cast<std::size_t>(s.out_features), kKernel, "grad_bias");
  require_no_overlap(grad_bias, grad_y, kKernel, "grad_bias", "grad_y");
  bias_backward(grad_y, grad_bias);  // the sum over rows a bias on its own gets too
}

}  // namespace shardscope::exec::cpu
