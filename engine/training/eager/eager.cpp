// The eager context: fresh tensors, parameters as leaves, recording nodes, and the backward engine (see eager.h).
#include "training/eager/eager.h"

#include <algorithm>
#include <queue>
#include <set>
#include <stdexcept>

#include "training/reduction_scratch.h"

namespace shardscope::eager {

namespace {

constexpr std::uint64_t kAccumulateSequence = ~std::uint64_t{0};  // AccumulateGrad's UINT64_MAX

}  // namespace

Eager::Eager(ProgramBuilder& builder, EagerSettings s) : b(builder), settings(std::move(s)) {}

Tensor Eager::empty(const std::string& what, Sizes sizes, Dtype dtype, Category category, bool persistent) {
  const Bytes bytes = numel_of(sizes) * dtype_size(dtype);
  const TensorId id = b.alloc(name(what), bytes, category, persistent || category == Category::Gradients, plan_element(dtype));
  Sizes strides = contiguous_strides(sizes);
  return Tensor(b, id, std::move(sizes), std::move(strides), dtype, false);
}

Tensor Eager::empty_bytes(const std::string& what, Bytes bytes, Sizes sizes, Dtype dtype, Category category, bool persistent) {
  const TensorId id = b.alloc(name(what), bytes, category, persistent || category == Category::Gradients, plan_element(dtype));
  Sizes strides = contiguous_strides(sizes);
  return Tensor(b, id, std::move(sizes), std::move(strides), dtype, false);
}

Tensor Eager::empty_like(const std::string& what, const Tensor& like, Dtype dtype, Category category) {
  if (like.is_contiguous()) return empty(what, like.sizes(), dtype, category);
  // preserve_format: the same strides when dense, else dense strides in the order of like's (infer_dense_strides)
  Sizes strides = like.strides();
  if (!like.is_non_overlapping_and_dense()) {
    std::vector<std::size_t> order(like.sizes().size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return like.strides()[x] > like.strides()[y]; });
    std::int64_t running = 1;
    for (std::size_t k = order.size(); k-- > 0;) {
      strides[order[k]] = running;
      running *= std::max<std::int64_t>(like.sizes()[order[k]], 1);
    }
  }
  const Bytes bytes = like.numel() * dtype_size(dtype);
  const TensorId id = b.alloc(name(what), bytes, category, category == Category::Gradients, plan_element(dtype));
  return Tensor(b, id, like.sizes(), std::move(strides), dtype, false);
}

Tensor Eager::parameter(const TensorSlice& slice, Sizes sizes, int layer_index, int index, Dtype dtype) {
  Sizes strides = contiguous_strides(sizes);
  Tensor p(b, slice.tensor, std::move(sizes), std::move(strides), dtype, /*view=*/true);
  p.param_layer = layer_index;
  p.param_index = index;
  const auto key = std::make_pair(layer_index, index);
  auto it = accumulators_.find(key);
  if (it == accumulators_.end()) {
    Node acc;
    acc.param_layer = layer_index;
    acc.param_index = index;
    acc.layer = layer_index;
    it = accumulators_.emplace(key, add_accumulate_node(std::move(acc))).first;
  }
  p.grad_edge = Edge{it->second, 0};
  return p;
}

int Eager::record(std::string node_name, const std::vector<const Tensor*>& inputs, std::vector<Tensor> saved,
                  BackwardFn fn, int slots) {
  if (!grad_enabled) return -1;
  bool any = false;
  for (const Tensor* t : inputs) any = any || (t && t->requires_grad());
  if (!any) return -1;
  Node n;
  n.name = std::move(node_name);
  n.sequence = sequence_++;
  n.slots = slots;
  n.layer = layer;
  n.scope = scope;
  for (const Tensor* t : inputs) {
    n.next.push_back(t && t->requires_grad() ? t->grad_edge : Edge{});
    n.inputs.push_back(InputMeta{t ? t->sizes() : Sizes{}, t ? t->dtype() : Dtype::F32});
    if (t && t->requires_grad() && nodes_[static_cast<std::size_t>(t->grad_edge.node)].is_accumulate())
      ++nodes_[static_cast<std::size_t>(t->grad_edge.node)].uses;
  }
  n.saved = std::move(saved);
  n.apply = std::move(fn);
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size()) - 1;
}

void Eager::compute(ComputeKind kind, const std::string& what, double flops, Bytes bytes, const ComputeWork& work) {
  b.set_work(b.compute(kind, name(what), flops, bytes, layer), work);
}

void Eager::gemm(bool biased_addmm_rows) {
  if (!settings.workspaces) return;
  if (!in_backward) {
    settings.workspaces->touch_forward(b, settings.forward_thread);
    if (biased_addmm_rows) settings.workspaces->touch_cublaslt(b, settings.forward_thread);
  } else {
    settings.workspaces->touch_backward(b, settings.backward_thread);
  }
}

std::vector<TensorId> Eager::reduction_scratch(std::int64_t outputs, std::int64_t inputs_per_output, bool along_rows) {
  const FrameworkBehaviour& f = settings.behaviour;
  const ReductionScratch scratch = cuda_reduction_scratch(outputs, inputs_per_output, along_rows, f.reduction_multiprocessors,
                                                          f.reduction_max_threads_per_multiprocessor);
  std::vector<TensorId> tensors;
  if (scratch.staging > 0)
    tensors.push_back(b.alloc(name("reduction staging"), scratch.staging, Category::Temporaries, false, ElementType::Opaque));
  if (scratch.semaphores > 0)
    tensors.push_back(b.alloc(name("reduction semaphores"), scratch.semaphores, Category::Temporaries, false, ElementType::Opaque));
  return tensors;
}

void Eager::release_scratch(const std::vector<TensorId>& scratch) {
  for (auto it = scratch.rbegin(); it != scratch.rend(); ++it) b.release(*it);
}

Category Eager::grad_category(const Edge& edge) {
  if (!edge.valid()) return Category::Temporaries;
  const Node& n = nodes_[static_cast<std::size_t>(edge.node)];
  if (!n.is_accumulate() || n.uses > 1 || !settings.sink) return Category::Temporaries;
  return settings.sink->grad_category(n.param_layer, n.param_index);
}

// at::sum_to: the leading dims `target` lacks and the dims it keeps at size 1 are summed (a CUDA reduction).
Tensor Eager::sum_to(const Tensor& grad, const Sizes& target, Category category) {
  const std::size_t lead = grad.sizes().size() - target.size();
  bool inner_reduced = false;
  for (std::size_t i = 0; i < target.size(); ++i)
    if (target[i] == 1 && grad.sizes()[lead + i] != 1) inner_reduced = true;
  Tensor out = empty("gradient summed to its input's shape", target, grad.dtype(), category);
  const std::int64_t outputs = numel_of(target);
  const std::int64_t per_output = outputs > 0 ? grad.numel() / outputs : 0;
  const auto scratch = reduction_scratch(outputs, per_output, /*along_rows=*/!inner_reduced);
  compute(ComputeKind::Backward, "sum_to", static_cast<double>(grad.numel()), grad.bytes() + out.bytes(),
          elementwise_work(WorkKind::Reduction, grad.dtype()));
  release_scratch(scratch);
  return out;
}

// engine.cpp validate_outputs: each gradient takes its input's shape (sum_to) and dtype (to).
void Eager::validate_outputs(const Node& n, std::vector<Tensor>& grads) {
  for (std::size_t i = 0; i < grads.size() && i < n.next.size(); ++i) {
    Tensor& g = grads[i];
    if (!g.defined() || !n.next[i].valid()) continue;
    const InputMeta& meta = n.inputs[i];
    const Category category = grad_category(n.next[i]);
    if (g.sizes() != meta.sizes) g = sum_to(g, meta.sizes, category);
    if (g.dtype() != meta.dtype) {
      Tensor cast = empty_like("gradient cast to its input's dtype", g, meta.dtype, category);
      compute(ComputeKind::Backward, "to(" + dtype_name(meta.dtype) + ")", 0, g.bytes() + cast.bytes(),
              elementwise_work(WorkKind::Copy, g.dtype()));
      g = std::move(cast);
    }
  }
}

void Eager::add_to_buffer(std::vector<Tensor>& buffer, const Edge& edge, Tensor grad) {
  const Node& target = nodes_[static_cast<std::size_t>(edge.node)];
  if (buffer.empty()) buffer.resize(static_cast<std::size_t>(target.slots));
  Tensor& old = buffer[static_cast<std::size_t>(edge.slot)];
  if (!old.defined()) {
    old = std::move(grad);
    return;
  }
  if (b.holders(old.storage()) == 1 && !old.is_view()) {  // old_var.add_(var)
    compute(ComputeKind::Backward, "accumulate gradient in place", static_cast<double>(old.numel()), 3 * old.bytes(),
            elementwise_work(WorkKind::Binary, old.dtype()));
    grad.reset();
    return;
  }
  // old_var + var: the sum is the gradient from now on (the parameter's .grad, for a tied weight)
  Category category = Category::Temporaries;
  if (target.is_accumulate() && settings.sink) category = settings.sink->grad_category(target.param_layer, target.param_index);
  Tensor sum = empty("gradients summed", old.sizes(), old.dtype(), category);
  compute(ComputeKind::Backward, "sum gradients", static_cast<double>(old.numel()), 3 * old.bytes(),
          elementwise_work(WorkKind::Binary, old.dtype()));
  old = std::move(sum);
  grad.reset();
}

void Eager::run_backward(const Tensor& root, Tensor seed) {
  if (!root.requires_grad()) return;
  const bool was_enabled = grad_enabled;
  grad_enabled = false;
  in_backward = true;
  run_graph(root, std::move(seed));
  // The graph dies with the loss: what no node released (nodes off the loss's path) goes now.
  release_graph_from(0);
  layer = -1;
  scope.clear();
  grad_enabled = was_enabled;
  in_backward = false;
}

void Eager::run_reentrant_backward(const Tensor& root, Tensor seed) {
  if (!root.requires_grad()) return;
  const bool was_enabled = grad_enabled, was_in_backward = in_backward;
  const int outer_layer = layer;
  const std::string outer_scope = scope;
  grad_enabled = false;
  in_backward = true;
  run_graph(root, std::move(seed));
  grad_enabled = was_enabled;
  in_backward = was_in_backward;
  layer = outer_layer;
  scope = outer_scope;
}

void Eager::release_graph_from(int first) {
  for (std::size_t i = static_cast<std::size_t>(std::max(first, 0)); i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    for (Tensor& s : n.saved) s.reset();
    n.saved.clear();
    n.apply = nullptr;
  }
}

Tensor Eager::detach(const Tensor& t) { return t.view_as(t.sizes(), t.strides()); }

Tensor Eager::detached_leaf(const Tensor& t, std::shared_ptr<Tensor>& grad) {
  Tensor x = detach(t);
  grad = std::make_shared<Tensor>();
  Node acc;
  acc.layer = layer;
  acc.scope = scope;
  acc.leaf_grad = grad;
  x.grad_edge = Edge{add_accumulate_node(std::move(acc)), 0};
  return x;
}

int Eager::add_accumulate_node(Node acc) {
  acc.name = "AccumulateGrad";
  acc.sequence = kAccumulateSequence;
  nodes_.push_back(std::move(acc));
  return static_cast<int>(nodes_.size()) - 1;
}

// accumulate_grad.h accumulateGrad with no .grad yet and grad mode off (inside backward): the incoming gradient
// becomes .grad when nothing else holds it and its layout is the leaf's (contiguous here), else a clone of it.
void Eager::take_leaf_grad(Node& leaf, Tensor grad) {
  if (!grad.defined()) return;
  if (b.holders(grad.storage()) == 1 && !grad.is_view() && grad.is_contiguous()) {
    *leaf.leaf_grad = std::move(grad);
    return;
  }
  Tensor clone = empty("gradient cloned into .grad", grad.sizes(), grad.dtype(), Category::Temporaries);
  compute(ComputeKind::Backward, "clone", 0, grad.bytes() + clone.bytes(), elementwise_work(WorkKind::Copy, grad.dtype()));
  *leaf.leaf_grad = std::move(clone);
}

void Eager::run_graph(const Tensor& root, Tensor seed) {
  // dependencies_: edges into each node reachable from the root
  std::map<int, int> dependencies;
  {
    std::vector<int> stack{root.grad_edge.node};
    std::set<int> seen{root.grad_edge.node};
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      for (const Edge& e : nodes_[static_cast<std::size_t>(n)].next) {
        if (!e.valid()) continue;
        ++dependencies[e.node];
        if (seen.insert(e.node).second) stack.push_back(e.node);
      }
    }
  }
  std::map<int, std::vector<Tensor>> buffers;
  auto order = [this](int a, int c) {
    return nodes_[static_cast<std::size_t>(a)].sequence < nodes_[static_cast<std::size_t>(c)].sequence;
  };
  std::priority_queue<int, std::vector<int>, decltype(order)> ready(order);
  add_to_buffer(buffers[root.grad_edge.node], root.grad_edge, std::move(seed));
  ready.push(root.grad_edge.node);
  while (!ready.empty()) {
    const int index = ready.top();
    ready.pop();
    // a reference into the deque stays valid while a reentrant backward records more nodes
    Node& n = nodes_[static_cast<std::size_t>(index)];
    std::vector<Tensor> grads = std::move(buffers[index]);
    buffers.erase(index);
    grads.resize(static_cast<std::size_t>(n.slots));
    layer = n.layer;
    scope = n.scope;
    if (n.leaf_grad) {
      take_leaf_grad(n, std::move(grads[0]));
      continue;
    }
    if (n.is_accumulate()) {
      // AccumulateGrad steals the gradient as .grad, or adds it into the existing one (the sink decides)
      if (settings.sink && grads[0].defined()) {
        // a gradient that reached its parameter through views (TBackward0) is known to be .grad only now
        if (settings.sink->grad_category(n.param_layer, n.param_index) == Category::Gradients)
          b.recategorize(grads[0].storage(), Category::Gradients, true);
        b.retain(grads[0].storage());
        settings.sink->take_grad(n.param_layer, n.param_index, grads[0].storage());
      }
      grads.clear();
      continue;
    }
    std::vector<Tensor> outputs = n.apply ? n.apply(*this, n, grads) : std::vector<Tensor>{};
    outputs.resize(n.next.size());
    validate_outputs(n, outputs);
    for (Tensor& g : grads) g.reset();   // call_function's inputs
    for (Tensor& s : n.saved) s.reset();  // release_variables
    n.saved.clear();
    n.apply = nullptr;
    for (std::size_t i = 0; i < n.next.size(); ++i) {
      const Edge& e = n.next[i];
      if (!e.valid()) continue;
      if (outputs[i].defined()) add_to_buffer(buffers[e.node], e, std::move(outputs[i]));
      if (--dependencies[e.node] == 0) ready.push(e.node);
    }
  }
}

}  // namespace shardscope::eager
