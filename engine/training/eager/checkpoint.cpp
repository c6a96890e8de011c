// The reentrant checkpoint (see checkpoint.h): a no-grad forward, then a recomputation and a nested backward.
#include "training/eager/checkpoint.h"

#include <memory>

namespace shardscope::eager {

Tensor checkpoint(Eager& e, const std::vector<Tensor>& args, const CheckpointedFn& fn, const std::vector<Tensor>& held) {
  bool any_requires_grad = false;
  for (const Tensor& a : args) any_requires_grad = any_requires_grad || (a.defined() && a.requires_grad());
  if (!e.grad_enabled || !any_requires_grad) return fn(args);  // no graph to rebuild (1.13 warns, and runs it)

  Tensor out;
  {
    e.grad_enabled = false;  // with torch.no_grad(): outputs = run_function(*args)
    out = fn(args);
    e.grad_enabled = true;
  }
  std::vector<const Tensor*> inputs;
  std::vector<bool> required;
  for (const Tensor& a : args) {
    inputs.push_back(a.defined() ? &a : nullptr);
    required.push_back(a.defined() && a.requires_grad());
  }
  const int node = e.record(
      "CheckpointFunctionBackward", inputs, args,
      [fn, required, autocast = e.autocast_active](Eager& eg, const Node& n, std::vector<Tensor>& grads) {
        const int first_recomputed = eg.node_count();
        // detach_variable(ctx.saved_tensors)
        std::vector<std::shared_ptr<Tensor>> leaf_grads(n.saved.size());
        std::vector<Tensor> detached;
        for (std::size_t i = 0; i < n.saved.size(); ++i) {
          const Tensor& s = n.saved[i];
          if (!s.defined()) detached.emplace_back();
          else if (required[i]) detached.push_back(eg.detached_leaf(s, leaf_grads[i]));
          else detached.push_back(eg.detach(s));
        }
        // with torch.enable_grad(), torch.autocast(**ctx's autocast state): outputs = ctx.run_function(*detached_inputs),
        // on the autograd thread; leaving that autocast region (nesting back to 0) clears its cast cache, so a weight
        // cast the recomputed graph did not save is freed before the nested backward
        Tensor recomputed;
        {
          const bool was = eg.grad_enabled;
          eg.grad_enabled = true;
          if (autocast) eg.enter_autocast();
          recomputed = fn(detached);
          if (autocast) eg.exit_autocast();
          eg.grad_enabled = was;
        }
        // torch.autograd.backward(outputs_with_grad, args_with_grad): the incoming gradient stays the caller's
        eg.run_reentrant_backward(recomputed, grads.empty() ? Tensor() : grads[0]);
        std::vector<Tensor> out_grads;
        for (const auto& g : leaf_grads) out_grads.push_back(g && g->defined() ? std::move(*g) : Tensor());
        // the frame's locals go: the recomputed output with what is left of its graph, the detached inputs
        recomputed.reset();
        detached.clear();
        eg.release_graph_from(first_recomputed);
        return out_grads;
      });
  e.connect(out, node);
  e.graph_held.emplace_back();
  for (const Tensor& t : held)
    if (t.defined()) e.graph_held.back().push_back(t);
  return out;
}

}  // namespace shardscope::eager
