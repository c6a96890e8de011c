// PyTorch's eager mode for one rank, op by op: the autograd graph a forward records and the engine that runs it
// backward (torch/csrc/autograd/engine.cpp, input_buffer.cpp, function.h; PyTorch 2.x), over tensors whose storage
// the ProgramBuilder allocates and frees. What this follows, and where:
// - Every node gets the next sequence number at creation (Node::sequence_nr_); AccumulateGrad runs first when ready
//   (UINT64_MAX). The engine's ready queue pops the highest sequence number (ReadyQueue's CompareNodeTaskTime).
// - A node runs when every edge into it has delivered (dependencies_); its input buffer holds what has arrived.
// - Evaluating a node (Engine::evaluate_function / call_function): its gradient formula allocates its outputs;
//   validate_outputs sums a gradient to its input's shape (sum_to) and casts it to its input's dtype; then the
//   incoming gradients are dropped (call_function's inputs), then the saved variables (release_variables), then each
//   output goes into its next node's input buffer.
// - A second gradient for the same buffer slot is added in place when the held one is a plain tensor only the buffer
//   holds, else out of place (input_buffer.cpp accumulate). Measured on PyTorch 2.11 (H200): a gradient that is a
//   view (a Linear's input gradient viewed back to 3-D, a tied weight's gradient through TBackward0) is summed out
//   of place; a plain one (LayerNorm's input gradient) in place.
// - Generated nodes compute their gradients and release their saved inputs in alphabetical order of the argument
//   names, saved outputs after the inputs (MmBackward0 makes mat2's gradient before self's, AddmmBackward0 mat1's,
//   mat2's, self's; MulBackward0 other's before self's; the attention kernels free key, query, value, then
//   logsumexp, output): the order PyTorch's generated code allocated and freed in, on 1.13 (CPU) and 2.11 (H200).
// Usage: a module's forward calls ops (training/eager/ops.h) on an Eager; loss.backward() is run_backward(loss, seed).
#pragma once
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "training/eager/tensor.h"
#include "training/framework_behaviour.h"
#include "training/model_pass.h"

namespace shardscope::eager {

class Eager;
struct Node;

// The work of an elementwise kernel (copy, add, softmax, …) computing in `dtype`.
inline ComputeWork elementwise_work(WorkKind kind, Dtype dtype) { return ComputeWork::elementwise(kind, plan_element(dtype)); }

// A node's gradient formula: the gradients of its forward outputs in (an undefined Tensor where none arrived), the
// gradients of its forward inputs out, one per Node::next (undefined where an input needs none).
using BackwardFn = std::function<std::vector<Tensor>(Eager&, const Node&, std::vector<Tensor>& grads)>;

struct InputMeta {
  Sizes sizes;
  Dtype dtype = Dtype::F32;
};

struct Node {
  std::string name;             // PyTorch's: "AddmmBackward0"
  std::uint64_t sequence = 0;
  int slots = 1;                // gradients it receives: one per differentiable forward output
  std::vector<Edge> next;       // one per differentiable forward input, in the op's argument order
  std::vector<InputMeta> inputs;  // per next: what validate_outputs shapes and casts its gradient to
  std::vector<Tensor> saved;    // SavedVariables, released in this order after the node ran
  BackwardFn apply;
  int layer = -1;               // the model layer the forward op belonged to
  std::string scope;            // its module path, for labels ("h.3.attn")
  int param_layer = -1;         // AccumulateGrad: the parameter
  int param_index = -1;
  int uses = 0;                 // AccumulateGrad: edges into it (2 for GPT-2's tied wte)
  // AccumulateGrad of a leaf that is no parameter (a reentrant checkpoint's detached input): its .grad
  std::shared_ptr<Tensor> leaf_grad;
  bool is_accumulate() const { return param_layer >= 0; }
};

// torch.autocast's state (aten/src/ATen/autocast_mode.cpp): off, or the 16-bit type CUDA ops in the
// lower_precision_fp list run in; casts of fp32 parameters are cached until the region exits.
enum class AutocastType { Off, Bf16, Fp16 };

struct EagerSettings {
  FrameworkBehaviour behaviour;
  CublasWorkspaces* workspaces = nullptr;
  std::string forward_thread{kForwardGemmThread};
  std::string backward_thread{kBackwardGemmThread};
  GradSink* sink = nullptr;  // where parameter gradients go (AccumulateGrad)
  AutocastType autocast = AutocastType::Off;
};

class Eager {
 public:
  Eager(ProgramBuilder& builder, EagerSettings settings);

  ProgramBuilder& b;
  const EagerSettings settings;
  bool grad_enabled = true;      // torch.is_grad_enabled(): false inside backward and under no_grad
  bool autocast_active = false;  // inside the autocast region
  bool in_backward = false;      // run_backward is running (ops are the autograd thread's)
  int layer = -1;                // the module running: its model layer, which compute ops are attributed to
  std::string scope;             // its path ("h.3.mlp"), prefixed to tensor and op names

  // A fresh contiguous tensor (at::empty), held once by the returned reference.
  // `persistent`: may outlive the program (a loss the script still holds at the end).
  Tensor empty(const std::string& what, Sizes sizes, Dtype dtype, Category category = Category::Activations,
               bool persistent = false);
  // A fresh contiguous tensor whose storage holds `bytes` (more than its elements: a buffer resized smaller).
  Tensor empty_bytes(const std::string& what, Bytes bytes, Sizes sizes, Dtype dtype, Category category = Category::Activations,
                     bool persistent = false);
  // A fresh tensor with `like`'s layout where that is dense (empty_like, preserve_format), else contiguous.
  Tensor empty_like(const std::string& what, const Tensor& like, Dtype dtype, Category category = Category::Activations);
  // A model parameter as the leaf autograd knows it (its AccumulateGrad node is made at its first use).
  Tensor parameter(const TensorSlice& slice, Sizes sizes, int layer, int index, Dtype dtype = Dtype::F32);
  // Records the autograd node of an op whose inputs are `inputs` (nothing when grad is off or none requires grad);
  // returns its index, or -1. Outputs take their edges with connect().
  int record(std::string name, const std::vector<const Tensor*>& inputs, std::vector<Tensor> saved, BackwardFn fn,
             int slots = 1);
  void connect(Tensor& output, int node, int slot = 0) const {
    if (node >= 0) output.grad_edge = Edge{node, slot};
  }
  // A compute op (for the simulator's clock) attributed to the current layer. `work` says which kernel it is, in
  // which element type and shape (plan/compute_work.h), so that the simulator times each op as it runs: under
  // autocast a GEMM in 16-bit, a loss in fp32, a cast as a copy.
  void compute(ComputeKind kind, const std::string& what, double flops, Bytes bytes, const ComputeWork& work);
  ComputeKind kind() const { return in_backward ? ComputeKind::Backward : ComputeKind::Forward; }
  // A cuBLAS GEMM is about to run (its output already allocated): the thread's workspace at its first GEMM, and the
  // cuBLASLt workspace for a biased addmm of more than one row (FrameworkBehaviour).
  void gemm(bool biased_addmm_rows);
  // ATen's CUDA reduction scratch (training/reduction_scratch.h), allocated before the kernel, freed after it.
  std::vector<TensorId> reduction_scratch(std::int64_t outputs, std::int64_t inputs_per_output, bool along_rows);
  void release_scratch(const std::vector<TensorId>& scratch);
  // The category of a gradient flowing along `edge`: the parameter's .grad (Gradients) when it goes straight to a
  // parameter used once whose .grad is None, else a temporary.
  Category grad_category(const Edge& edge);
  std::string name(const std::string& what) const { return scope.empty() ? what : scope + " " + what; }

  // torch.autocast's cast cache (autocast_mode.cpp get_cached_casts): each fp32 parameter's 16-bit copy made at its
  // first use in the region, held until the region exits (clear_cache), so a weight used twice is cast once.
  std::map<std::pair<int, int>, Tensor> autocast_cache;
  void enter_autocast() { autocast_active = settings.autocast != AutocastType::Off; }
  void exit_autocast() {
    autocast_active = false;
    autocast_cache.clear();
  }

  // loss.backward(): runs the graph from `root`'s node with `seed` as its gradient, then frees what it held. The
  // caller keeps its own reference to the seed (torch.autograd.backward's grad_tensors) and drops it after.
  void run_backward(const Tensor& root, Tensor seed);
  const Node& node(int index) const { return nodes_.at(static_cast<std::size_t>(index)); }

  // For torch.utils.checkpoint's reentrant backward (training/eager/checkpoint.h):
  // `t.detach()`: the same storage, no autograd history.
  Tensor detach(const Tensor& t);
  // detach_variable: `t.detach()` with requires_grad set, a leaf whose gradient AccumulateGrad leaves in `*grad`
  // (as x.grad: stolen when nothing else holds it and it has the leaf's layout, else a contiguous clone).
  Tensor detached_leaf(const Tensor& t, std::shared_ptr<Tensor>& grad);
  // torch.autograd.backward(root, seed) called from inside a node's backward: the engine runs the root's graph
  // to its end before returning (reentrant), on the same thread; the outer backward's state is restored after.
  void run_reentrant_backward(const Tensor& root, Tensor seed);
  // What the graph's nodes hold beyond their saved variables until the loss that roots them is freed (a reentrant
  // checkpoint's keyword arguments, in its context's partial), one group per node in the order recorded.
  std::vector<std::vector<Tensor>> graph_held;
  // How many nodes have been recorded; release_graph_from(n): the nodes recorded since n die (the outputs that
  // held them went), with whatever they still saved.
  int node_count() const { return static_cast<int>(nodes_.size()); }
  void release_graph_from(int first);

 private:
  // The engine's loop over the graph behind `root` (dependencies, ready queue, evaluation), `seed` its gradient.
  void run_graph(const Tensor& root, Tensor seed);
  void take_leaf_grad(Node& leaf, Tensor grad);
  int add_accumulate_node(Node acc);  // named AccumulateGrad, first when ready; its index
  void add_to_buffer(std::vector<Tensor>& buffer, const Edge& edge, Tensor grad);
  void validate_outputs(const Node& node, std::vector<Tensor>& grads);
  Tensor sum_to(const Tensor& grad, const Sizes& target, Category category);

  std::deque<Node> nodes_;
  std::map<std::pair<int, int>, int> accumulators_;  // (layer, index) -> its AccumulateGrad node
  std::uint64_t sequence_ = 0;
};

// Runs `body` with the current module set to (layer, scope), as a module's __call__ does, restoring it after.
class ModuleScope {
 public:
  ModuleScope(Eager& e, int layer, const std::string& scope) : e_(e), layer_(e.layer), scope_(e.scope) {
    e.layer = layer;
    e.scope = scope;
  }
  ~ModuleScope() {
    e_.layer = layer_;
    e_.scope = scope_;
  }
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  Eager& e_;
  int layer_;
  std::string scope_;
};

}  // namespace shardscope::eager
