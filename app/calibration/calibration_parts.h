// The parts of a calibration (calibration.h), each adding its curves to the profile being made. Internal to
// app/calibration.
#pragma once
#include <chrono>
#include <ostream>
#include <string>

#include "calibration/kernel_timer.h"
#include "cluster/device_profile.h"
#include "exec/backend.h"
#include "exec/backend_choice.h"

namespace shardscope::calibration {

struct Context {
  exec::BackendKind kind = exec::BackendKind::Cpu;
  exec::RankBackend* rank = nullptr;  // rank 0 of a one-rank backend: where the kernels run
  KernelTimer timer{0.02, 3};
  bool quick = false;
  std::ostream* progress = nullptr;
  DeviceProfile* profile = nullptr;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::string pass;  // "pass 2 of 5: " in the progress lines ("" for one pass)

  double time(const exec::KernelLaunch& launch) const {
    return timer.seconds([&] { return rank->run_kernel_timed(launch); });
  }
  void say(const std::string& line) const {
    if (progress == nullptr) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    *progress << "calibrate [" << static_cast<int>(s) << " s]: " << pass << line << std::endl;
  }
};

// GEMMs of nn.Linear's passes (forward, input_grad, weight_grad) over a grid of (rows, out, in), and the bias
// terms around them (bias_add, bias_grad), for one element type.
void calibrate_gemms(Context& c, ElementType element);
// Elementwise and reduction kernels over sizes (relu, losses, copies, LayerNorm, embedding, GELU ...).
void calibrate_elementwise(Context& c);
// Seconds to zero-fill a block of `bytes` that the caches no longer hold, as the executor's fill of a new
// allocation meets it: each call fills the next of enough buffers to exceed the caches (at least 2).
double cold_zero_seconds(Context& c, std::int64_t bytes);
// How many copies of `bytes` of tensors hold more than the caches do (64 MiB on the CPU, 256 MiB on a GPU; 2 to
// 4096): what a kernel timed cold rotates through, as it meets memory a step has moved past.
std::int64_t copies_beyond_caches(exec::BackendKind kind, Bytes bytes);
// The optimizer step of each kind over parameter counts.
void calibrate_optimizers(Context& c);
// GPT-2 blocks at a few shapes; our attention core is what the GEMMs and elementwise curves do not explain.
void calibrate_gpt2_blocks(Context& c);
// Collectives and messages between two ranks of a fresh backend, each rank on its own thread.
void calibrate_collectives(Context& c);
// How much slower kernels run while 2 (and 4) rank threads compute at once (CPU backend).
void calibrate_concurrency(Context& c);
// The launch floor, and the executor's own time per op from a tiny run through the whole executor.
void calibrate_overheads(Context& c);

}  // namespace shardscope::calibration
