// CPU executor speed: the GEMMs of the 20 × Linear(2000, 2000), batch 20 scenario (forward and both backward
// products, as the kernels run them), a square 2000³ GEMM (the machine's BLAS peak), and ring all-reduce of
// 16 MiB between 2 and 4 rank threads, and Adam's update of one layer's parameters (memory-bound: the bytes/s to
// hold against the machine's bandwidth), and the kernels whose choice follows their data: ReLU forward and
// backward on activations of random sign, dropout's keep mask at p 0.1 and 0.5 (a branch on either would mispredict
// as often as the data changes). Run: build/tests/bench/bench_cpu_kernels
#include <benchmark/benchmark.h>

#include <barrier>
#include <thread>
#include <vector>

#include "exec/cpu/activation_kernels.h"
#include "exec/cpu/blas_gemm.h"
#include "exec/cpu/cpu_communicator.h"
#include "exec/cpu/linear_kernels.h"
#include "exec/cpu/optimizer_kernels.h"
#include "exec/shared_kernels/dropout_mask.h"

namespace {

using namespace shardscope::exec::cpu;

constexpr int kWidth = 2000;
constexpr int kBatch = 20;
const LinearShape kMlpLayer{kBatch, kWidth, kWidth};

// Seconds per element of `elements` processed each iteration (Google Benchmark prints it with an SI prefix: "2.0n").
void set_time_per_element(benchmark::State& state, std::size_t elements) {
  state.counters["ns/element"] = benchmark::Counter(static_cast<double>(elements),
                                                    benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOP/s"] = benchmark::Counter(flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::OneK::kIs1000);
}

// Arg: OpenBLAS threads (1, or 2 = this machine's cores).
void configure_blas(benchmark::State& state) { set_blas_thread_count(static_cast<int>(state.range(0))); }

void BM_LinearForward(benchmark::State& state) {
  configure_blas(state);
  std::vector<float> x(kBatch * kWidth, 0.5f), w(kWidth * kWidth, 0.25f), b(kWidth, 0.1f), y(kBatch * kWidth);
  for (auto _ : state) {
    linear_forward(kMlpLayer, x, w, b, y);
    benchmark::DoNotOptimize(y.data());
  }
  set_flops(state, 2.0 * kBatch * kWidth * kWidth);  // y = x·Wᵀ: m=20, n=2000, k=2000
}

void BM_LinearBackwardInput(benchmark::State& state) {
  configure_blas(state);
  std::vector<float> grad_y(kBatch * kWidth, 0.5f), w(kWidth * kWidth, 0.25f), grad_x(kBatch * kWidth);
  for (auto _ : state) {
    linear_backward_input(kMlpLayer, grad_y, w, grad_x);
    benchmark::DoNotOptimize(grad_x.data());
  }
  set_flops(state, 2.0 * kBatch * kWidth * kWidth);  // dX = dY·W: m=20, n=2000, k=2000
}

void BM_LinearBackwardWeight(benchmark::State& state) {
  configure_blas(state);
  std::vector<float> grad_y(kBatch * kWidth, 0.5f), x(kBatch * kWidth, 0.25f), grad_w(kWidth * kWidth, 0.0f);
  for (auto _ : state) {
    linear_backward_weight(kMlpLayer, grad_y, x, grad_w);
    benchmark::DoNotOptimize(grad_w.data());
  }
  set_flops(state, 2.0 * kBatch * kWidth * kWidth);  // dW += dYᵀ·X: m=2000, n=2000, k=20
}

void BM_SquareGemm2000(benchmark::State& state) {
  configure_blas(state);
  std::vector<float> a(kWidth * kWidth, 0.5f), b(kWidth * kWidth, 0.25f), c(kWidth * kWidth);
  for (auto _ : state) {
    gemm_f32(Transpose::No, Transpose::No, kWidth, kWidth, kWidth, 1.0f, a.data(), b.data(), 0.0f, c.data());
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, 2.0 * kWidth * kWidth * kWidth);
}

BENCHMARK(BM_LinearForward)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LinearBackwardInput)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LinearBackwardWeight)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
// Adam on one Linear(2000, 2000)'s weight (4 M fp32 elements, 16 MB each array, past the caches): it reads the
// parameter, gradient, exp_avg and exp_avg_sq and writes three of them back, 28 B per element.
void BM_AdamStepOneLayer(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(kWidth) * kWidth;
  std::vector<float> params(n, 0.5f), grads(n, 0.01f), exp_avg(n, 0.0f), exp_avg_sq(n, 0.0f);
  std::int64_t step = 0;
  for (auto _ : state) {
    adam_step({}, ++step, params, grads, exp_avg, exp_avg_sq);
    benchmark::ClobberMemory();
  }
  state.counters["bytes/s"] = benchmark::Counter(28.0 * static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::OneK::kIs1024);
}
BENCHMARK(BM_AdamStepOneLayer)->Unit(benchmark::kMillisecond)->UseRealTime();

// Arg: elements (a 96 × 384 activation: 36,864). Values of random sign, as after a Linear.
void BM_ReluForwardBackward(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<float> x(n), y(n), grad(n, 1.0f), grad_x(n);
  std::uint32_t bits = 12345;
  for (float& v : x) v = static_cast<float>((bits = bits * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
  for (auto _ : state) {
    relu_forward(x, y);
    relu_backward(grad, y, grad_x);
    benchmark::ClobberMemory();
  }
  set_time_per_element(state, n);
}
BENCHMARK(BM_ReluForwardBackward)->Arg(36864)->Arg(1 << 20)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Arg: p in percent. A 96 × 384 activation through native_dropout's mask (fill_keep_mask's draws).
void BM_DropoutKeepMask(benchmark::State& state) {
  const double p = static_cast<double>(state.range(0)) / 100;
  constexpr std::size_t kElements = 36864;
  std::vector<std::uint8_t> mask(kElements);
  shardscope::exec::fill_keep_mask(1, 0, p, 0, mask);
  std::vector<float> x(kElements, 1.5f), out(kElements);
  for (auto _ : state) {
    shardscope::exec::apply_keep_mask(x, mask.data(), p, out.data());
    benchmark::ClobberMemory();
  }
  set_time_per_element(state, kElements);
}
BENCHMARK(BM_DropoutKeepMask)->Arg(10)->Arg(50)->Unit(benchmark::kMicrosecond)->UseRealTime();

BENCHMARK(BM_SquareGemm2000)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Arg: ranks. The benchmark thread is rank 0; the other ranks are threads that wait at a barrier for each
// iteration. Average keeps the values bounded over many iterations (the DDP use: averaged gradients).
// algbw = buffer bytes / time; busbw = algbw · 2(n−1)/n (NCCL's convention: what each link carries).
void BM_RingAllReduce16MiB(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  constexpr std::size_t kElements = 16 * 1024 * 1024 / sizeof(float);
  CpuCommunicator comm(ranks);
  std::vector<int> group(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) group[static_cast<std::size_t>(r)] = r;
  std::vector<std::vector<float>> buffers(static_cast<std::size_t>(ranks), std::vector<float>(kElements, 1.0f));
  std::barrier sync(ranks);
  bool stop = false;
  std::vector<std::thread> workers;
  for (int r = 1; r < ranks; ++r) {
    workers.emplace_back([&, r] {
      for (;;) {
        sync.arrive_and_wait();
        if (stop) return;
        comm.all_reduce(group, r, buffers[static_cast<std::size_t>(r)], ReduceOp::Average);
        sync.arrive_and_wait();
      }
    });
  }
  for (auto _ : state) {
    sync.arrive_and_wait();
    comm.all_reduce(group, 0, buffers[0], ReduceOp::Average);
    sync.arrive_and_wait();
  }
  stop = true;
  sync.arrive_and_wait();
  for (auto& w : workers) w.join();
  const double bytes = static_cast<double>(kElements * sizeof(float));
  state.counters["algbw_B/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate,
                                                   benchmark::Counter::OneK::kIs1024);
  state.counters["busbw_B/s"] = benchmark::Counter(bytes * 2.0 * (ranks - 1) / ranks,
                                                   benchmark::Counter::kIsIterationInvariantRate,
                                                   benchmark::Counter::OneK::kIs1024);
}

BENCHMARK(BM_RingAllReduce16MiB)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
