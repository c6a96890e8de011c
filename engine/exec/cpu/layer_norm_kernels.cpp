// LayerNorm rows: statistics in double (one pass over a row of at most a few thousand values), results in fp32.
#include "exec/cpu/layer_norm_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "exec/cpu/span_checks.h"

namespace shardscope::exec::cpu {

namespace {

struct RowStats {
  double mean = 0, rstd = 0;
};

RowStats row_stats(const float* x, int n, float eps) {
  double sum = 0, sq = 0;
  for (int j = 0; j < n; ++j) sum += x[j];
  const double mean = sum / n;
  for (int j = 0; j < n; ++j) {
    const double d = x[j] - mean;
    sq += d * d;
  }
  return {mean, 1.0 / std::sqrt(sq / n + static_cast<double>(eps))};
}

void check(const LayerNormShape& s, std::size_t x, std::size_t weight, const char* kernel) {
  require_positive(s.rows, kernel, "rows");
  require_positive(s.features, kernel, "features");
  const auto n = static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.features);
  if (x != n || weight != static_cast<std::size_t>(s.features))
    throw std::invalid_argument(std::string(kernel) + ": input has " + std::to_string(x) + " elements and weight " +
                                std::to_string(weight) + ", expected " + std::to_string(n) + " and " +
                                std::to_string(s.features));
}

}  // namespace

void layer_norm_forward(const LayerNormShape& s, std::span<const float> x, std::span<const float> weight,
                        std::span<const float> bias, std::span<float> y) {
  check(s, x.size(), weight.size(), "layer_norm_forward");
  require_size(bias, weight.size(), "layer_norm_forward", "bias");
  require_size(y, x.size(), "layer_norm_forward", "output");
  require_no_overlap(x, y, "layer_norm_forward", "input", "output");
  const int n = s.features;
  for (int r = 0; r < s.rows; ++r) {
    const float* in = x.data() + static_cast<std::size_t>(r) * n;
    float* out = y.data() + static_cast<std::size_t>(r) * n;
    const RowStats st = row_stats(in, n, s.eps);
    for (int j = 0; j < n; ++j)
      out[j] = static_cast<float>((in[j] - st.mean) * st.rstd) * weight[j] + bias[j];
  }
}

void layer_norm_backward(const LayerNormShape& s, std::span<const float> grad_y, std::span<const float> x,
                         std::span<const float> weight, std::span<float> grad_x, bool accumulate_grad_x,
                         std::span<float> grad_weight, std::span<float> grad_bias) {
  check(s, x.size(), weight.size(), "layer_norm_backward");
  require_size(grad_y, x.size(), "layer_norm_backward", "grad_out");
  require_size(grad_weight, weight.size(), "layer_norm_backward", "grad_weight");
  require_size(grad_bias, weight.size(), "layer_norm_backward", "grad_bias");
  if (!grad_x.empty()) require_size(grad_x, x.size(), "layer_norm_backward", "grad_input");
  const int n = s.features;
  std::vector<double> dw(static_cast<std::size_t>(n), 0.0), db(static_cast<std::size_t>(n), 0.0);
  std::vector<double> xhat(static_cast<std::size_t>(n));
  for (int r = 0; r < s.rows; ++r) {
    const float* in = x.data() + static_cast<std::size_t>(r) * n;
    const float* gy = grad_y.data() + static_cast<std::size_t>(r) * n;
    const RowStats st = row_stats(in, n, s.eps);
    double mean_g = 0, mean_gx = 0;  // means over the row of dxhat and dxhat·xhat
    for (int j = 0; j < n; ++j) {
      xhat[j] = (in[j] - st.mean) * st.rstd;
      const double g = static_cast<double>(gy[j]) * weight[j];
      mean_g += g;
      mean_gx += g * xhat[j];
      dw[j] += static_cast<double>(gy[j]) * xhat[j];
      db[j] += gy[j];
    }
    mean_g /= n;
    mean_gx /= n;
    if (grad_x.empty()) continue;
    float* gx = grad_x.data() + static_cast<std::size_t>(r) * n;
    for (int j = 0; j < n; ++j) {
      const auto value = static_cast<float>(st.rstd * (static_cast<double>(gy[j]) * weight[j] - mean_g - xhat[j] * mean_gx));
      gx[j] = accumulate_grad_x ? gx[j] + value : value;
    }
  }
  std::transform(dw.begin(), dw.end(), grad_weight.begin(), [](double v) { return static_cast<float>(v); });
  std::transform(db.begin(), db.end(), grad_bias.begin(), [](double v) { return static_cast<float>(v); });
}

}  // namespace shardscope::exec::cpu
