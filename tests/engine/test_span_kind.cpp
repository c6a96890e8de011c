// What a plan-less trace's span is, from its text (trace/store/span_kind.h): the texts the recorder writes
// (python/shardscope/record.py's _begin_span calls), those of a real torch.profiler trace (PyTorch 2.11, the H200
// sample under tests/data/h200-torch-2.11/import/) and NCCL's kernel names; then the store and the Chrome export
// using it for a recorded run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "trace/export/chrome_trace_export.h"
#include "trace/store/span_kind.h"
#include "trace/store/trace_store.h"

namespace shardscope {
namespace {

SpanKind computing(ComputeKind k) { return {OpKind::Compute, k, CollectiveKind::AllReduce}; }
SpanKind collective(CollectiveKind k) { return {OpKind::Collective, ComputeKind::Forward, k}; }
const SpanKind kSend{OpKind::Send, ComputeKind::Forward, CollectiveKind::AllReduce};
const SpanKind kRecv{OpKind::Recv, ComputeKind::Forward, CollectiveKind::AllReduce};

TEST(SpanKind, TheRecordersTexts) {
  EXPECT_EQ(span_kind_of_text("forward 0.linear1"), computing(ComputeKind::Forward));
  EXPECT_EQ(span_kind_of_text("backward 0.linear1"), computing(ComputeKind::Backward));
  EXPECT_EQ(span_kind_of_text("optimizer step (AdamW)"), computing(ComputeKind::Optimizer));
  EXPECT_EQ(span_kind_of_text("all_reduce DDP bucket 0 25.00 MiB"), collective(CollectiveKind::AllReduce));
  EXPECT_EQ(span_kind_of_text("all_reduce"), collective(CollectiveKind::AllReduce));
  EXPECT_EQ(span_kind_of_text("_all_gather_base 4.00 MiB"), collective(CollectiveKind::AllGather));
  EXPECT_EQ(span_kind_of_text("all_gather_into_tensor 4.00 MiB"), collective(CollectiveKind::AllGather));
  EXPECT_EQ(span_kind_of_text("reduce_scatter_tensor 1.00 MiB"), collective(CollectiveKind::ReduceScatter));
  EXPECT_EQ(span_kind_of_text("_reduce_scatter_base"), collective(CollectiveKind::ReduceScatter));
  EXPECT_EQ(span_kind_of_text("reduce 16 B"), collective(CollectiveKind::Reduce));
  EXPECT_EQ(span_kind_of_text("broadcast 2.00 KiB"), collective(CollectiveKind::Broadcast));
  EXPECT_EQ(span_kind_of_text("gather"), collective(CollectiveKind::Gather));
  EXPECT_EQ(span_kind_of_text("scatter"), collective(CollectiveKind::Scatter));
  EXPECT_EQ(span_kind_of_text("barrier"), collective(CollectiveKind::Barrier));
  EXPECT_EQ(span_kind_of_text("send 64.00 KiB"), kSend);
  EXPECT_EQ(span_kind_of_text("isend 64.00 KiB"), kSend);
  EXPECT_EQ(span_kind_of_text("batch_isend_irecv"), kSend);
  EXPECT_EQ(span_kind_of_text("recv 64.00 KiB"), kRecv);
  EXPECT_EQ(span_kind_of_text("irecv"), kRecv);
  // Calls with no kind of ours, and a module that happens to be named like a collective.
  EXPECT_EQ(span_kind_of_text("all_to_all_single 1.00 MiB"), std::nullopt);
  EXPECT_EQ(span_kind_of_text("broadcast_object_list"), collective(CollectiveKind::Broadcast));
  EXPECT_EQ(span_kind_of_text("forward gather"), computing(ComputeKind::Forward));
  EXPECT_EQ(span_kind_of_text("reducer"), std::nullopt);
  EXPECT_EQ(span_kind_of_text(""), std::nullopt);
}

TEST(SpanKind, AProfilerTracesTexts) {
  EXPECT_EQ(span_kind_of_text("autograd::engine::evaluate_function: AddmmBackward0"), computing(ComputeKind::Backward));
  EXPECT_EQ(span_kind_of_text("Optimizer.step#AdamW.step"), computing(ComputeKind::Optimizer));
  EXPECT_EQ(span_kind_of_text("Memcpy HtoD (Pageable -> Device)"), computing(ComputeKind::Copy));
  EXPECT_EQ(span_kind_of_text("Memset (Device)"), computing(ComputeKind::Copy));
  EXPECT_EQ(span_kind_of_text("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            collective(CollectiveKind::AllReduce));
  EXPECT_EQ(span_kind_of_text("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"),
            collective(CollectiveKind::AllGather));
  EXPECT_EQ(span_kind_of_text("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL"), collective(CollectiveKind::ReduceScatter));
  EXPECT_EQ(span_kind_of_text("ncclDevKernel_Broadcast_RING_LL"), collective(CollectiveKind::Broadcast));
  EXPECT_EQ(span_kind_of_text("ncclDevKernel_Reduce_Sum_f32_RING_LL"), collective(CollectiveKind::Reduce));
  EXPECT_EQ(span_kind_of_text("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"), kSend);
  EXPECT_EQ(span_kind_of_text("ncclDevKernel_Generic"), std::nullopt);
  EXPECT_EQ(span_kind_of_text("nccl:all_reduce"), collective(CollectiveKind::AllReduce));
  EXPECT_EQ(span_kind_of_text("gloo:broadcast"), collective(CollectiveKind::Broadcast));
  EXPECT_EQ(span_kind_of_text("c10d::allreduce_"), collective(CollectiveKind::AllReduce));
  // Kernels and host ops name no phase of the step.
  EXPECT_EQ(span_kind_of_text("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x2x1"), std::nullopt);
  EXPECT_EQ(span_kind_of_text("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"),
            std::nullopt);
  EXPECT_EQ(span_kind_of_text("aten::addmm"), std::nullopt);
  EXPECT_EQ(span_kind_of_text("aten::scatter_add_"), std::nullopt);
}

TEST(SpanKind, MatrixProductsByModuleClassKernelOrOp) {
  // The recorder's leaf modules: the class in the last parentheses, whatever the module's name says.
  EXPECT_TRUE(span_text_is_matmul("forward fc1 (Linear)"));
  EXPECT_TRUE(span_text_is_matmul("backward transformer.h.0.attn.c_attn (Conv1D)"));
  EXPECT_TRUE(span_text_is_matmul("forward features.0 (Conv2d)"));
  EXPECT_TRUE(span_text_is_matmul("forward attn.out_proj (NonDynamicallyQuantizableLinear)"));
  EXPECT_FALSE(span_text_is_matmul("forward linear_relu (ReLU)"));
  EXPECT_FALSE(span_text_is_matmul("backward transformer.h.0.ln_1 (LayerNorm)"));
  EXPECT_FALSE(span_text_is_matmul("forward fc1"));  // recorded before spans named their class: not known
  // Kernels the profiler importer prefixed with their launch's phase: the kernel's name decides.
  EXPECT_TRUE(span_text_is_matmul("forward · sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x2x1"));
  EXPECT_TRUE(span_text_is_matmul(
      "backward · fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80>::Params)"));
  EXPECT_FALSE(span_text_is_matmul("forward · void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"));
  EXPECT_EQ(span_kind_of_text("backward · sm80_xmma_gemm_f32f32_f32f32_f32_nn_n"), computing(ComputeKind::Backward));
  EXPECT_EQ(span_kind_of_text("optimizer step · void at::native::multi_tensor_apply_kernel<>"), computing(ComputeKind::Optimizer));
  // Kernels and ops of a profiler trace (the H200 sample's names).
  EXPECT_TRUE(span_text_is_matmul("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x2x1"));
  EXPECT_TRUE(span_text_is_matmul("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x64_8x5_nt_align1>(cutlass_80"));
  EXPECT_TRUE(span_text_is_matmul("fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackw"));
  EXPECT_TRUE(span_text_is_matmul("aten::addmm"));
  EXPECT_TRUE(span_text_is_matmul("autograd::engine::evaluate_function: AddmmBackward0"));
  EXPECT_TRUE(span_text_is_matmul("aten::scaled_dot_product_attention"));
  EXPECT_FALSE(span_text_is_matmul("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"));
  EXPECT_FALSE(span_text_is_matmul("autograd::engine::evaluate_function: NativeLayerNormBackward0"));
  EXPECT_FALSE(span_text_is_matmul("aten::to"));
  EXPECT_FALSE(span_text_is_matmul(""));
}

TEST(SpanKind, NamesAsTheExportCategory) {
  EXPECT_EQ(span_kind_name(computing(ComputeKind::Backward)), compute_kind_name(ComputeKind::Backward));
  EXPECT_EQ(span_kind_name(collective(CollectiveKind::AllGather)), collective_kind_name(CollectiveKind::AllGather));
  EXPECT_EQ(span_kind_name(kRecv), op_kind_name(OpKind::Recv));
}

TraceEvent op_event(TraceEventKind kind, TimeNs t, OpIndex op, Stream stream, std::string text = "") {
  TraceEvent e;
  e.kind = kind;
  e.t_ns = t;
  e.step = 1;
  e.op = op;
  e.stream = stream;
  e.text = std::move(text);
  return e;
}

// A recorded run as the recorder writes it: no plan, each span named by its OpBegin's text.
void recorded_run(TraceStore& store) {
  TraceHeader header;
  header.source = "pytorch 1.13.0 cpu";
  header.devices = {{0, "CPU", 0}};
  store.begin(header);
  using K = TraceEventKind;
  const std::pair<const char*, Stream> spans[] = {{"forward fc1", Stream::Compute},
                                                  {"backward fc1", Stream::Compute},
                                                  {"all_reduce DDP bucket 0 4.00 KiB", Stream::Communication},
                                                  {"optimizer step (Adam)", Stream::Compute},
                                                  {"my_custom_kernel", Stream::Compute}};
  for (int i = 0; i < 5; ++i) {
    store.emit(op_event(K::OpBegin, 100 * i, i, spans[i].second, spans[i].first));
    store.emit(op_event(K::OpEnd, 100 * i + 50, i, spans[i].second));
  }
  store.end();
}

TEST(SpanKind, TheStoreAndTheChromeExportUseARecordedSpansText) {
  TraceStore store;
  recorded_run(store);
  store.read([](const TraceData& d) {
    EXPECT_EQ(d.span_kind(0, 1), computing(ComputeKind::Backward));
    EXPECT_EQ(d.span_kind(0, 2), collective(CollectiveKind::AllReduce));
    EXPECT_EQ(d.span_kind(0, 4), std::nullopt);
    EXPECT_EQ(d.span_kind(0, 9), std::nullopt);  // no such span
    EXPECT_EQ(d.span_kind(3, 0), std::nullopt);  // no such rank
  });
  std::ostringstream out;
  write_chrome_trace(store, out);
  std::map<std::string, std::string> category_of;
  const nlohmann::json trace = nlohmann::json::parse(out.str());
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X") category_of[e.at("name")] = e.at("cat");
  const std::map<std::string, std::string> expected = {{"forward fc1", "forward"},
                                                       {"backward fc1", "backward"},
                                                       {"all_reduce DDP bucket 0 4.00 KiB", "all-reduce"},
                                                       {"optimizer step (Adam)", "optimizer"},
                                                       {"my_custom_kernel", "unknown"}};
  EXPECT_EQ(category_of, expected);
}

}  // namespace
}  // namespace shardscope
