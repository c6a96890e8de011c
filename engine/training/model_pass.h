// Forward and backward of a layer stack on one device, as PyTorch's autograd allocates and frees:
// each layer's output, what its node saves (derivatives.yaml), activation gradients, parameter gradients
// handed to a GradSink in the order AccumulateGrad runs, and the loss (MSE or cross-entropy). Transformer blocks
// follow the model's activation recomputation (CheckpointMode): forward keeps less, backward re-runs the forward.
// Strategy-independent: DP replicas, DDP ranks and single devices all run through it.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "model/model.h"
#include "plan/cublas_workspace.h"
#include "plan/program_builder.h"
#include "scenario/scenario.h"
#include "training/framework_behaviour.h"

namespace shardscope {

constexpr Bytes kFp32Bytes = 4;

// One cuBLAS workspace per (thread, stream), created at the thread's first GEMM and kept
// (aten/src/ATen/cuda/CublasHandlePool.cpp, 2.x). Threads: "main" (forward) and "autograd" (backward); forward
// threads only when FrameworkBehaviour::forward_threads_hold_workspace. Likewise one cuBLASLt workspace per thread
// that runs a biased addmm (FrameworkBehaviour::cublaslt_workspace_bytes), created at its first one and kept.
class CublasWorkspaces {
 public:
  explicit CublasWorkspaces(const FrameworkBehaviour& behaviour)
      : bytes_(behaviour.cublas_workspace_bytes), forward_threads_(behaviour.forward_threads_hold_workspace),
        lt_bytes_(behaviour.cublaslt_workspace_bytes) {}
  void touch_forward(ProgramBuilder& builder, const std::string& thread) {
    if (forward_threads_) touch(builder, thread);
  }
  void touch_backward(ProgramBuilder& builder, const std::string& thread) { touch(builder, thread); }
  void touch_cublaslt(ProgramBuilder& builder, const std::string& thread);

 private:
  void touch(ProgramBuilder& builder, const std::string& thread);
  Bytes bytes_;
  bool forward_threads_;
  Bytes lt_bytes_;
  std::set<std::string> seen_;
  std::set<std::string> lt_seen_;
};

// Receives parameter gradients during backward.
class GradSink {
 public:
  virtual ~GradSink() = default;
  // Category for the gradient tensor autograd is about to create ("gradients" when it becomes .grad,
  // "temporaries" when it will be added into an existing .grad and dropped).
  virtual Category grad_category(int layer, int param) = 0;
  // The gradient tensor, one reference handed over, in AccumulateGrad order.
  virtual void take_grad(int layer, int param, TensorId grad) = 0;
};

// Called around every layer of a pass (layer = model index): ZeRO-3 gathers a unit's parameters before its
// forward and backward and frees or reduces them after.
class LayerHooks {
 public:
  virtual ~LayerHooks() = default;
  virtual void before_layer_forward(int /*layer*/) {}
  virtual void after_layer_forward(int /*layer*/) {}
  virtual void before_layer_backward(int /*layer*/) {}
  virtual void after_layer_backward(int /*layer*/) {}  // after the layer's gradients reached the GradSink
};

// Each parameter as an operand, per layer and parameter: its own tensor or a slice of a flat buffer.
using LayerParams = std::vector<std::vector<TensorSlice>>;

struct PassSettings {
  std::int64_t batch = 0;      // samples on this device
  bool grad_enabled = true;    // false: torch.no_grad() and model.eval()
  LossKind loss = LossKind::Mse;
  // The framework version's rules for what kernels allocate (mse_loss's result, reductions' scratch).
  FrameworkBehaviour behaviour;
  std::string forward_thread{kForwardGemmThread};
  std::string backward_thread{kBackwardGemmThread};
  Bytes param_element_bytes = kFp32Bytes;  // 2 under fp16/bf16 mixed precision: the gradients autograd makes
  // The layers this pass runs: [first_layer, end_layer) (a pipeline stage); end 0 = to the last layer.
  std::size_t first_layer = 0;
  std::size_t end_layer = 0;
  LayerHooks* hooks = nullptr;
  // Factor on the gradient loss.backward() starts from (Op::scale of the loss backward): a pipeline divides each
  // micro-batch's loss by the number of micro-batches (Megatron), so the summed gradients are the batch mean's.
  double loss_scale = 1;
};

// What a model's activations (and their gradients) hold: the training's 16-bit type where the model sizes them
// at 2 bytes (transformers under mixed precision), else fp32 (an MLP's activations stay fp32 in the accounting
// while its parameters and gradients are 16-bit).
inline ElementType activation_element(const Model& model, ElementType compute) {
  return model.activation_element_bytes == 2 ? compute : ElementType::Fp32;
}

class ModelPass {
 public:
  ModelPass(ProgramBuilder& builder, const Model& model, LayerParams params, PassSettings settings,
            CublasWorkspaces& workspaces);

  // Runs the layers on `input` (the caller keeps its own reference to input.tensor). The input may be a slice of a
  // tensor (a pipeline micro-batch: a view of rows of x); kernels read that slice wherever autograd uses the tensor,
  // reference counts stay on the whole tensor, as a view keeps its base alive. Returns the output, one reference.
  TensorId forward(TensorSlice input);
  TensorId forward(TensorId input) { return forward(whole(input)); }
  // The loss on `output` (reference handed over) against `target` (the caller keeps its reference; a slice as for
  // forward's input). Returns the scalar loss, one reference for the caller.
  TensorId loss_forward(TensorId output, TensorSlice target);
  TensorId loss_forward(TensorId output, TensorId target) { return loss_forward(output, whole(target)); }
  // loss.backward() down to the model output: returns the gradient of the output (one reference). The seed
  // gradient (ones_like(loss)) stays allocated until backward() has run (or release_seed()).
  TensorId loss_backward();
  // torch.autograd.backward holds the seed in its grad_tensors until it returns (torch/autograd/__init__.py, 1.8
  // and 2.x): a caller whose backward runs in other passes (DataParallel's replicas) releases it where that ends.
  void release_seed();
  // Backward through the layers from the output gradient (reference handed over). Returns the gradient of the
  // pass's input (one reference for the caller) when the input requires grad and first_layer > 0 (a pipeline
  // stage sends it back), else -1.
  TensorId backward(TensorId grad_output, GradSink& sink) { return backward(whole(grad_output), sink); }
  // The same from a slice of a gradient tensor (DataParallel's device-0 chunk of the scattered output gradient).
  TensorId backward(TensorSlice grad_output, GradSink& sink);

  Bytes output_bytes() const;  // the last layer's output of this pass

  // Where the kernels find layer `layer`'s parameters from now on, while the tensors autograd saves stay the ones
  // given at construction: ZeRO-3 / FSDP compute on gathered buffers but save the parameter handles, whose storage
  // is freed between uses.
  void bind_operands(std::size_t layer, std::vector<TensorSlice> operands);

 private:
  Bytes activation_bytes(std::int64_t numel_per_sample) const;
  ElementType activation_element() const { return shardscope::activation_element(model_, b_.compute_element()); }
  // A CUDA reduction's staging buffer and semaphores (training/reduction_scratch.h) allocated before the kernel;
  // release_reduction_scratch frees them after it, semaphores first, as Reduce.cuh's buffers go out of scope.
  std::vector<TensorId> alloc_reduction_scratch(std::int64_t outputs, std::int64_t inputs_per_output, bool along_rows,
                                                const std::string& what);
  void release_reduction_scratch(const std::vector<TensorId>& scratch);
  TensorSlice operand(TensorId tensor) const;  // the view given for the input, target or output gradient, else whole
  bool input_requires_grad(std::size_t layer) const;
  // What a layer's backward op reads and writes, for its kernel's operands.
  struct BackwardTensors {
    TensorId grad_output = -1, grad_input = -1;
    std::vector<TensorId> param_grads;          // per parameter (a tied one: the InputBuffer it adds into)
    std::vector<TensorId> summed_into_pending;  // a tied weight's own gradient, added into param_grads' buffer
    std::vector<TensorId> recomputed;           // recompute_block's tensors
    TensorId tied_grad = -1;                    // a Linear using another layer's weight: that weight's gradient
    TensorId gathered_input = -1;               // sequence parallelism: the all-gathered input, read for saved[0]
  };
  // Sequence parallelism on an MLP's Linear pairs (model_pass_sequence_parallel.cpp; Model::sequence_parallel_ranks).
  int sp_ranks() const { return model_.sequence_parallel_ranks; }
  void init_sequence_parallel();  // fills sp_split_ once, not a scan of the layers for every layer
  bool sp_column(std::size_t layer) const;  // a column-parallel Linear: its input shard is all-gathered first
  bool sp_row(std::size_t layer) const;     // a row-parallel Linear: reduce-scattered output, bias added after
  // The rows of `shard` from every tensor-parallel rank, in a buffer of tp times its bytes (one reference).
  TensorId sp_all_gather(TensorSlice shard, Bytes shard_bytes, std::size_t layer, const std::string& what);
  // `full`'s rows reduced over the tensor-parallel ranks, this rank's chunk into `shard`.
  void sp_reduce_scatter(TensorId full, TensorId shard, std::size_t layer, const std::string& what);
  TensorId sp_row_forward(std::size_t layer, TensorId input);
  TensorId sp_row_backward(std::size_t layer, TensorId grad_output, bool needs_input_grad, GradSink& sink);
  void annotate_forward(OpIndex op, std::size_t layer, TensorSlice input, TensorId output, TensorId working_set);
  void annotate_backward(OpIndex op, std::size_t layer, const BackwardTensors& tensors);
  // GPT-2's layers (model_pass_transformer.cpp); Llama's have no kernels (executors refuse them).
  bool executes_as_gpt2() const;
  TensorId block_forward_working_set(std::size_t layer);
  void annotate_transformer_forward(OpIndex op, std::size_t layer, TensorId input, TensorId output, TensorId working_set);
  void annotate_recompute(OpIndex op, std::size_t layer, const std::vector<TensorId>& recomputed);
  void annotate_transformer_backward(OpIndex op, std::size_t layer, const BackwardTensors& tensors);
  TensorSlice weight_of(std::size_t layer, const LayerParams& params) const;
  void save_block_activations(std::size_t layer);
  std::vector<TensorId> recompute_block(std::size_t layer);
  TensorId backward_layers(TensorSlice grad_output, GradSink& sink);

  ProgramBuilder& b_;
  const Model& model_;
  LayerParams params_;    // what autograd saves (retained while a node holds it)
  LayerParams operands_;  // what the kernels read and write
  PassSettings settings_;
  CublasWorkspaces& workspaces_;
  std::vector<std::vector<TensorId>> saved_;  // per layer, what its autograd node holds
  std::vector<TensorId> loss_saved_;          // tensors held by the loss nodes
  TensorId loss_shared_ = -1;                 // cross-entropy: log_softmax output, saved by two nodes
  TensorId seed_ = -1;                        // ones_like(loss), while backward runs
  // What forward's input, the loss's target and backward's incoming gradient are views of.
  TensorSlice input_view_, target_view_, grad_output_view_;
  // Gradients of tied weights waiting in autograd's InputBuffer for the owner's use: (layer, param) -> tensor.
  std::map<std::pair<int, int>, TensorId> pending_tied_grads_;
  // Under sequence parallelism, which Linears are column- (1) and row-parallel (2); empty otherwise.
  std::vector<std::uint8_t> sp_split_;
};

}  // namespace shardscope
