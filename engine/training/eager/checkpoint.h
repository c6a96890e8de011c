// torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=True), the reentrant CheckpointFunction, as
// transformers' gradient_checkpointing_enable() applies it to each decoder block (its default
// gradient_checkpointing_kwargs {"use_reentrant": True}; modeling_utils.py, GradientCheckpointingLayer.__call__).
// PyTorch 1.13 and 2.x (torch/utils/checkpoint.py) alike:
// - forward: the tensor arguments are saved (ctx.save_for_backward, released after this node's backward), `fn` runs
//   under torch.no_grad() so the block keeps nothing, and its output takes a CheckpointFunctionBackward node;
// - backward: the saved arguments detached (detach_variable: leaves that require grad where the originals did),
//   `fn` run again under enable_grad on the autograd thread, torch.autograd.backward(output, incoming gradient)
//   over that graph (reentrant: parameters' gradients reach AccumulateGrad, hence DDP's buckets, from inside it),
//   then the detached leaves' .grad returned; the recomputed output and graph die with the backward's frame.
// - keyword arguments (GradientCheckpointingLayer passes all but the hidden states so: Llama's mask, cos and sin,
//   positions) are held by the partial in ctx.run_function, which lives as long as the graph's nodes, i.e. until the
//   loss is freed (Eager::graph_held), not only until the block's backward.
// - under torch.autocast the recomputation re-enters an autocast region with the forward's state (ctx's autocast
//   kwargs): its weight casts are cached anew and the cache is cleared when it exits, before the nested backward.
// Not modelled: the RNG states the context keeps (torch.get_rng_state(), a CPU ByteTensor; CUDA's states are CPU
// tensors too), which are host memory.
// Usage: Tensor out = checkpoint(e, {hidden, mask}, [&](const std::vector<Tensor>& a) { return block(a[0], a[1]); });
//        (keyword arguments: captured by value in the function, and listed in `held`)
#pragma once
#include <functional>
#include <vector>

#include "training/eager/eager.h"

namespace shardscope::eager {

using CheckpointedFn = std::function<Tensor(const std::vector<Tensor>& args)>;

// `args`: the positional tensor arguments in order (an undefined Tensor for a None); `held`: the keyword arguments'
// tensors. `fn` must build its output from those only.
Tensor checkpoint(Eager& e, const std::vector<Tensor>& args, const CheckpointedFn& fn, const std::vector<Tensor>& held = {});

}  // namespace shardscope::eager
