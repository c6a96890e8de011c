// PyTorch's eager-mode rules as training/eager/ models them, each on the smallest graph that shows it: which reshapes
// are views (at::detail::computeStride), the order a generated node makes its gradients in (MmBackward0: mat2's
// before self's, as 1.13 on the CPU and 2.11 on an H200 both allocate), and the input buffer's accumulation (in place
// into a plain tensor only the buffer holds, out of place when the first gradient is a view).
#include <gtest/gtest.h>

#include <map>

#include "training/eager/checkpoint.h"
#include "training/eager/ops.h"

namespace shardscope {
namespace {

using eager::Dtype;
using eager::Sizes;
using eager::Tensor;
namespace ops = eager::ops;

// q, k, v of GPT-2's attention: [b, s, h·d] viewed [b, s, h, d] and transposed to [b, h, s, d]; a gradient laid out
// like that reshapes back to [b, s, h·d] as a view only in that layout.
TEST(EagerLayouts, ViewStridesFollowComputeStride) {
  const Sizes bshd{8, 512, 12, 64};
  // [b, h, s, d] contiguous, transposed to [b, s, h, d]: h and d are not adjacent in memory, no view
  EXPECT_FALSE(eager::view_strides(bshd, {393216, 64, 32768, 1}, {8, 512, 768}));
  // [b, s, h, d] contiguous seen through a transpose and back: a view
  EXPECT_EQ(eager::view_strides(bshd, {393216, 768, 64, 1}, {8, 512, 768}), (Sizes{393216, 768, 1}));
  // kᵀ of a contiguous [b, h, s, d]: [b, h, d, s] to [b·h, d, s] merges b and h only: a view
  EXPECT_EQ(eager::view_strides({8, 12, 64, 512}, {393216, 32768, 1, 64}, {96, 64, 512}), (Sizes{32768, 1, 64}));
}

// A sink that records the gradients AccumulateGrad hands over.
class RecordingSink : public GradSink {
 public:
  Category grad_category(int, int) override { return Category::Gradients; }
  void take_grad(int layer, int param, TensorId grad) override { grads[{layer, param}] = grad; }
  std::map<std::pair<int, int>, TensorId> grads;
};

struct Graph {
  ProgramBuilder builder{0};
  RecordingSink sink;
  eager::Eager e{builder, [this] {
                   eager::EagerSettings s;
                   s.sink = &sink;
                   return s;
                 }()};
  TensorId param(const std::string& name, Bytes bytes) {
    return builder.alloc(name, bytes, Category::Parameters, true, ElementType::Fp32);
  }
  // live bytes at the first Phase op (Alloc and Free replayed in order)
  static Bytes live_at_phase(const Program& p) {
    Bytes live = 0;
    for (const Op& op : p.ops) {
      if (op.kind == OpKind::Phase) return live;
      if (op.kind == OpKind::Alloc) live += p.tensors.at(op.tensor).bytes;
      if (op.kind == OpKind::Free) live -= p.tensors.at(op.tensor).bytes;
    }
    return -1;
  }
  // the allocations of the program, in order, by name
  std::vector<std::string> allocations() { return allocations(builder.finish()); }
  static std::vector<std::string> allocations(const Program& p) {
    std::vector<std::string> names;
    for (const Op& op : p.ops)
      if (op.kind == OpKind::Alloc) names.push_back(p.tensors.at(op.tensor).name.str());
    return names;
  }
};

std::ptrdiff_t position(const std::vector<std::string>& names, const std::string& name) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i].find(name) != std::string::npos) return static_cast<std::ptrdiff_t>(i);
  return -1;
}

TEST(EagerAutograd, MmBackwardMakesMat2sGradientBeforeSelfs) {
  Graph g;
  const TensorId a_id = g.param("a", 16 * 8 * 4), w_id = g.param("w", 4 * 8 * 4);
  {
    const Tensor a = g.e.parameter(whole(a_id), {16, 8}, 0, 0);
    const Tensor w = g.e.parameter(whole(w_id), {4, 8}, 0, 1);
    Tensor y = ops::linear(g.e, a, w);  // a @ w.t(): mm(self = a, mat2 = w.t())
    Tensor loss = ops::mean_last(g.e, ops::mean_last(g.e, y));
    const Tensor seed = g.e.empty("seed", loss.sizes(), Dtype::F32);
    g.e.run_backward(loss, seed);
  }
  ASSERT_EQ(g.sink.grads.size(), 2u);
  const Bytes w_grad = g.builder.tensor(g.sink.grads.at({0, 1})).bytes;
  const auto names = g.allocations();
  const auto mat2 = position(names, "mm backward (mat2)"), self = position(names, "mm backward (mat1)");
  ASSERT_GE(mat2, 0);
  ASSERT_GE(self, 0);
  EXPECT_LT(mat2, self);
  // w's gradient came through TBackward0: a view of the [4, 8] result (w's own layout), handed to AccumulateGrad
  EXPECT_EQ(w_grad, 4 * 8 * 4);
}

// x feeds two ops; its buffer first receives one gradient, then the other. A plain first gradient takes the second
// in place (no third tensor); one that is a view (here the transposed gradient t() hands back) makes a sum.
TEST(EagerAutograd, InputBufferAccumulatesInPlaceOnlyIntoAPlainGradient) {
  for (const bool view_first : {false, true}) {
    Graph g;
    const TensorId x_id = g.param("x", 6 * 6 * 4);
    {
      const Tensor x = g.e.parameter(whole(x_id), {6, 6}, 0, 0);
      // the later op's gradient arrives first (higher sequence number): make it a view or a plain tensor
      Tensor plain = ops::tanh(g.e, x);
      Tensor later = view_first ? ops::t(g.e, x) : ops::tanh(g.e, x);
      Tensor sum = ops::add(g.e, plain, later);
      Tensor loss = ops::mean_last(g.e, ops::mean_last(g.e, sum));
      const Tensor seed = g.e.empty("seed", loss.sizes(), Dtype::F32);
      g.e.run_backward(loss, seed);
    }
    const auto names = g.allocations();
    EXPECT_EQ(position(names, "gradients summed") >= 0, view_first) << (view_first ? "view first" : "plain first");
  }
}


// torch.utils.checkpoint (reentrant) around y = tanh(tanh(x)), x = tanh(p), loss = mean(mean(y)) (keepdim). Hand
// count, B = one [4, 6] fp32 tensor (96 bytes), tanh saving its result, mean only sizes, the loss [4, 1] (16 bytes):
// - after the forward without the checkpoint: p, x, the inner result and y (each saved by the tanh that made it),
//   the loss: 4B + 16; with it the function ran under no_grad, so only the checkpoint's input x is saved, and y,
//   which nothing saves, goes with its name: p, x, the loss: 2B + 16;
// - backward with it: the function runs again (two more tanh results, allocated after the seed) and a nested
//   backward through it; p's gradient reaches AccumulateGrad either way.
TEST(EagerCheckpoint, ForwardKeepsTheInputOnlyAndBackwardRecomputes) {
  const Bytes B = 4 * 6 * 4, loss_bytes = 4 * 1 * 4;
  for (const bool checkpointed : {false, true}) {
    Graph g;
    const TensorId p_id = g.param("p", B);
    {
      const Tensor p = g.e.parameter(whole(p_id), {4, 6}, 0, 0);
      Tensor x = ops::tanh(g.e, p);
      const auto body = [&g](const std::vector<Tensor>& args) { return ops::tanh(g.e, ops::tanh(g.e, args[0])); };
      Tensor y = checkpointed ? eager::checkpoint(g.e, {x}, body) : body({x});
      x.reset();
      Tensor loss = ops::mean_last(g.e, ops::mean_last(g.e, y));
      y.reset();
      g.builder.phase("forward");
      const Tensor seed = g.e.empty("seed", loss.sizes(), Dtype::F32);
      g.e.run_backward(loss, seed);
    }
    ASSERT_EQ(g.sink.grads.size(), 1u);
    const Program program = g.builder.finish();
    const auto names = Graph::allocations(program);
    std::ptrdiff_t tanh_after_seed = 0;
    const std::ptrdiff_t seed = position(names, "seed");
    ASSERT_GE(seed, 0);
    for (std::size_t i = static_cast<std::size_t>(seed) + 1; i < names.size(); ++i)
      tanh_after_seed += names[i].find("tanh") != std::string::npos && names[i].find("backward") == std::string::npos;
    EXPECT_EQ(tanh_after_seed, checkpointed ? 2 : 0) << checkpointed;
    EXPECT_EQ(Graph::live_at_phase(program), (checkpointed ? 2 : 4) * B + loss_bytes) << checkpointed;
  }
}
}  // namespace
}  // namespace shardscope
