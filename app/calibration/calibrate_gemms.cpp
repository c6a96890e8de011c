// GEMM calibration through the backend's Linear kernels (plan/kernel.h LinearForward / LinearBackward), recorded
// in calibrate.py's layouts: "forward" y = x·Wᵀ (m = rows, n = out, k = in), "input_grad" dx = dy·W (m = rows,
// n = in, k = out), "weight_grad" dW = dyᵀ·x (m = out, n = in, k = rows). Our LinearBackward computes dW always and
// dx when given one, so input_grad is the time with dx less the time without (the sum of the two, what a
// backward costs, is then measured exactly at every grid point). The bias terms are timed the same way: a forward
// with a bias less one without (bias_add), a backward with a bias gradient less one without (bias_grad), at a
// small `in` so the GEMM around them stays small.
#include <algorithm>
#include <string>

#include "calibration/calibration_parts.h"
#include "calibration/device_buffers.h"

namespace shardscope::calibration {

namespace {

exec::KernelLaunch linear(Kernel kernel, int rows, int in, int out, std::vector<exec::DeviceBuffer> operands) {
  exec::KernelLaunch l;
  l.kernel = kernel;
  l.rows = rows;
  l.in_features = in;
  l.out_features = out;
  l.operands = std::move(operands);
  return l;
}

// A difference of two medians can come out at or below 0 for a term lost in the noise of the larger one: keep it
// at a small share of the whole instead, so a curve stays positive.
double difference(double with, double without) { return std::max(with - without, 0.02 * with); }

}  // namespace

void calibrate_gemms(Context& c, ElementType element) {
  const std::string dtype = profile_dtype_name(dtype_of(element).value());
  const double eb = static_cast<double>(element_bytes(element));
  // Modest on the CPU (2 shared cores in CI): products above the cut-off are left out, where throughput is flat
  // (the simulator holds the best measured throughput beyond the grid).
  const bool cpu = c.kind == exec::BackendKind::Cpu;
  std::vector<int> rows = {16, 64, 256, 1024, 4096}, widths = {32, 128, 512, 2048};
  double max_flop = cpu ? 6e8 : 2e11;
  if (!cpu) rows = {64, 256, 1024, 4096, 16384}, widths = {256, 1024, 4096, 8192};
  if (c.quick) rows = {8, 32}, widths = {16, 64}, max_flop = 1e9;
  auto& curve = c.profile->gemm[dtype];
  int shapes = 0;
  for (int m : rows)
    for (int n : widths)
      for (int k : widths) {
        if (2.0 * m * n * k > max_flop) continue;
        DeviceBuffers b(*c.rank);
        const auto x = b.values(std::int64_t{m} * k, element), w = b.values(std::int64_t{n} * k, element);
        const auto y = b.zeros(std::int64_t{m} * n * element_bytes(element), element);
        const auto dy = b.values(std::int64_t{m} * n, element);
        const auto dx = b.zeros(std::int64_t{m} * k * element_bytes(element), element);
        const auto dw = b.zeros(std::int64_t{n} * k * element_bytes(element), element);
        const double forward = c.time(linear(Kernel::LinearForward, m, k, n, {x, w, {}, y}));
        const double weight_grad = c.time(linear(Kernel::LinearBackward, m, k, n, {dy, x, w, {}, dw, {}}));
        const double both = c.time(linear(Kernel::LinearBackward, m, k, n, {dy, x, w, dx, dw, {}}));
        curve.push_back({"forward", double(m), double(n), double(k), 1, forward});
        curve.push_back({"input_grad", double(m), double(k), double(n), 1, difference(both, weight_grad)});
        curve.push_back({"weight_grad", double(n), double(k), double(m), 1, weight_grad});
        ++shapes;
      }
  c.say("gemm " + dtype + ": " + std::to_string(shapes) + " shapes x 3 layouts");

  // Bias terms over output sizes (rows × out elements), at in = 8.
  const std::vector<std::pair<int, int>> outputs = c.quick ? std::vector<std::pair<int, int>>{{16, 64}, {64, 256}}
                                                           : std::vector<std::pair<int, int>>{{16, 64}, {64, 256}, {256, 512},
                                                                                              {512, 2048}, {2048, 2048}};
  auto& bias_add = c.profile->elementwise["bias_add"][dtype];
  auto& bias_grad = c.profile->elementwise["bias_grad"][dtype];
  for (const auto& [m, n] : outputs) {
    constexpr int k = 8;
    DeviceBuffers b(*c.rank);
    const auto x = b.values(std::int64_t{m} * k, element), w = b.values(std::int64_t{n} * k, element);
    const auto bias = b.values(n, element), y = b.zeros(std::int64_t{m} * n * element_bytes(element), element);
    const auto dy = b.values(std::int64_t{m} * n, element);
    const auto dw = b.zeros(std::int64_t{n} * k * element_bytes(element), element), db = b.zeros(n * element_bytes(element), element);
    const double without = c.time(linear(Kernel::LinearForward, m, k, n, {x, w, {}, y}));
    const double with = c.time(linear(Kernel::LinearForward, m, k, n, {x, w, bias, y}));
    const double grad_without = c.time(linear(Kernel::LinearBackward, m, k, n, {dy, x, w, {}, dw, {}}));
    const double grad_with = c.time(linear(Kernel::LinearBackward, m, k, n, {dy, x, w, {}, dw, db}));
    const double elements = double(m) * n;
    // Keyed as sim/profile_costs.cpp looks them up: the bias rows written before the GEMM (2 passes over the
    // output), the output gradient read once for the bias gradient.
    bias_add.push_back({2 * elements * eb, difference(with, without), elements, 0});
    bias_grad.push_back({elements * eb, difference(grad_with, grad_without), elements, 0});
  }
  c.say("bias add / gradient " + dtype + ": " + std::to_string(outputs.size()) + " sizes");
}

}  // namespace shardscope::calibration
