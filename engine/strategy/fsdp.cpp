// FSDP2 lowering: what torch/distributed/fsdp/_fully_shard/ (v2.11.0: _fully_shard.py, _fsdp_state.py,
// _fsdp_param_group.py, _fsdp_param.py, _fsdp_collectives.py) allocates on one rank, in its order, on its streams.
// The order was checked allocation by allocation against PyTorch 2.11's own allocator histories on an H200
// (tests/data/h200-torch-2.11/fsdp2/, notes/issue38-fsdp2.md §2) and is held by tests/engine/test_fsdp_pytorch.cpp.
//
// - fully_shard(module) = one unit (an FSDPParamGroup) of the parameters no earlier call claimed: each layer with
//   parameters (or each transformer block), then the root with what is left (possibly nothing: then no unit). A
//   tied user (lm_head) joins its owner's unit, as fully_shard([wte, lm_head]) must.
// - FSDPParam._init_sharded_param: every parameter is chunked on dim 0 (torch.chunk: S = ⌈rows/N⌉ rows a chunk, rank
//   k's real rows clamp(rows − kS, 0, S)) and the *padded* chunk, S rows, is allocated on every rank (new_zeros of
//   chunks[0]'s size); the originals die when fully_shard returns, one unit at a time.
// - unshard (foreach_all_gather, world > 1): on the all-gather copy-in stream one flat output of N·ΣS·row elements
//   (rank j's shards at chunk j), [16-bit param_dtype: first a flat cast of the shards, alive until it returns];
//   the collective on the all-gather stream ([gloo: an output-sized device temporary, freed at once]).
// - copy-out (wait_for_unshard → foreach_all_gather_copy_out) on the *default* stream: one unsharded tensor per
//   parameter (all_gather_outputs, N·S rows) and torch.ops.fsdp.split_with_sizes_copy's metadata buffer
//   (TensorShape.cu pack_vecs, 8·(4k + 1 + B) B). Forward: the previous unit's flat output dies now (the walrus
//   `prev_all_gather_state` keeps it until wait_for_unshard returns) and this one is kept in
//   comm_ctx.all_gather_state until the next copy-out, or the root's post-forward; backward: this one dies at once.
//   World 1: no flat buffer, no collective: empty_like(shard) per parameter and a copy.
// - reshard (free_unsharded_param, group order) after the forward when the unit reshards (reshard_after_forward:
//   None = all but the root, True / False for all, k = keep a 1/k slice and re-gather in groups of k) and after
//   the backward. Backward: pre_backward unshards (unless still unsharded) and copies out, then prefetches the
//   unit before it in post-forward order (`prefetch` of them: set_modules_to_backward_prefetch).
// - post_backward (after the unit's first module's backward, or in the root's final callback for a unit whose
//   input needs no gradient): reshard; the previous reduce-scatter input dies (comm_ctx.reduce_scatter_state);
//   foreach_reduce: the reduce-scatter input ΣN·S·row in reduce_dtype on the default stream (chunk_cat, with its
//   metadata buffer 8·(6k + 2 + B) B; a narrowing cast stages in the gradients' dtype first), divided by N (AVG);
//   the unsharded gradients die in reverse order, all but the last with N > 1 (the loop variable of the Shard(0)
//   check holds it until foreach_reduce returns); on the reduce-scatter stream the output ΣS·row [gloo: an input
//   clone], [reduce_dtype ≠ fp32: its fp32 copy, the reduced-dtype output dying on return]; each parameter's
//   sharded .grad is a view of it at the parameter's offset, unpadded. The input is kept until the next post_backward.
// - Adam steps the DTensor parameters: state zeros_like the *unpadded* local shard (rank-dependent bytes).
// Categories: the padded shards are parameters; the unsharded copies (and k-slices) gathered_parameters; flat
// all-gather outputs, casts, reduce-scatter inputs and gloo temporaries communication_buffers; unsharded gradients
// and the reduce-scatter output gradients; the metadata buffers temporaries.
// Not modelled: explicit forward prefetch (set_modules_to_forward_prefetch), CPU offload, HSDP, fp16 param_dtype
// with an fp32 reduce_dtype (ATen's generic _chunk_cat_out allocates more), and gloo's worker thread sometimes
// dropping the last reference to a collective's tensor later than the main thread (nondeterministic).
#include "strategy/fsdp.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "scenario/fsdp_settings.h"

namespace shardscope {

namespace {

std::int64_t div_up(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

Bytes dtype_or_fp32_bytes(const std::optional<Dtype>& dtype) { return dtype ? dtype_bytes(*dtype) : kFp32Bytes; }

// A parameter's dim 0 and the elements of one row: the state_dict shape when the model knows it, a Linear's
// (out, in) weight, else one dimension.
std::pair<std::int64_t, std::int64_t> rows_of(const Layer& layer, const ParamSpec& spec) {
  if (!spec.shape.empty() && spec.shape[0] > 0) return {spec.shape[0], spec.numel / spec.shape[0]};
  if (layer.kind == LayerKind::Linear && layer.in_numel > 0 && spec.numel == layer.in_numel * layer.out_numel)
    return {layer.out_numel, layer.in_numel};
  return {spec.numel, 1};
}

}  // namespace

std::int64_t fsdp_extra_ops_per_step(const ResolvedScenario& scenario) {
  return 6 * static_cast<std::int64_t>(scenario.model.parameter_tensor_count());
}

std::vector<std::string> fsdp_notes(const ResolvedScenario& scenario) {
  const auto& strategy = scenario.settings.strategy;
  const int world = scenario.settings.cluster.world;
  const int prefetch = strategy.prefetch;
  const auto reshard = parse_reshard_after_forward(strategy.reshard_after_forward).value_or(ReshardAfterForward{});
  std::vector<std::string> notes = {
      "FSDP2 (fully_shard) keeps 1/N of every parameter, padded to a multiple of N rows, its gradient likewise and "
      "Adam's state for the unpadded rows: 4 + 4 + 8 B per parameter over N in fp32, with no extra fp32 copy (ZeRO-3 "
      "keeps DeepSpeed's fp32 partition besides)",
      "Each all-gather holds the flat output beside the unsharded parameters it is copied into (gathered_parameters), "
      "and FSDP2 keeps the previous unit's flat output until the next copy-out: three units' worth at a forward "
      "copy-out",
      scenario.settings.training.no_grad
          ? "Inference (no_grad): each unit is gathered for its forward only; a unit not resharded after its forward "
            "(the root, by default) stays unsharded as long as the model lives"
          : "The backward peak: the current unit unsharded, " + std::to_string(prefetch) +
                " prefetched all-gather output(s), the previous unit's reduce-scatter input (kept until the next one is "
                "issued) and the current unit's full gradients, not one unit more than the steady state",
      "model.to(device) then fully_shard: model_created holds the whole fp32 model, each unit's originals freed as "
      "its fully_shard returns (a meta-device model initialised after sharding avoids that peak; not modelled)",
      reshard.kind == ReshardAfterForward::Kind::Never
          ? "reshard_after_forward=False: every unit stays unsharded from its forward to its backward, one all-gather "
            "per unit per step instead of two"
          : "reshard_after_forward frees each unit after its forward and all-gathers it again for its backward (two "
            "all-gathers a step); False keeps them unsharded until backward, one all-gather, more memory"};
  // 2-D (torchtitan's parallelize_llama: apply_tp on the mesh's tp dimension, then fully_shard on its data-parallel
  // dimension): FSDPParam._init_sharded_param chunks the tensor-parallel DTensor's local tensor on dim 0 over the
  // data-parallel mesh; here the scenario is already world / tp ranks of one tensor-parallel index.
  if (strategy.tp > 1)
    notes.push_back("fsdp × tp " + std::to_string(strategy.tp) + " (2-D, as torchtitan composes fully_shard over a "
                    "tensor-parallel mesh dimension): each rank's tensor-parallel shard is chunked on dim 0 over the " +
                    std::to_string(world) + " ranks of its tensor-parallel index (N above), so a split layer is 1/(" +
                    std::to_string(strategy.tp) + "·" + std::to_string(world) + ") of the whole a rank and a "
                    "replicated one (a row-parallel bias) 1/" + std::to_string(world));
  if (reshard.kind == ReshardAfterForward::Kind::Ranks && reshard.ranks == 1)
    notes.push_back("reshard_after_forward=1 is False (fully_shard warns and keeps the parameters unsharded)");
  if (strategy.process_group == ProcessGroupBackend::Gloo && world > 1)
    notes.push_back("gloo: each all-gather allocates an output-sized device temporary and each reduce-scatter clones "
                    "its input (ProcessGroupGloo); gloo's worker thread sometimes frees a collective's tensor later than "
                    "PyTorch's main thread, so a measured figure can be one collective buffer above the plan's");
  if (strategy.fsdp_param_dtype == Dtype::Fp16 && dtype_or_fp32_bytes(strategy.fsdp_reduce_dtype) == 4)
    notes.push_back("fp16 param_dtype with an fp32 reduce_dtype takes ATen's generic _chunk_cat_out, whose extra "
                    "temporaries are not modelled");
  notes.push_back("FSDP2 not modelled: explicit forward prefetch (set_modules_to_forward_prefetch), CPU offload, HSDP; "
                  "all-gathers and reduce-scatters run on one communication stream here, on two in FSDP2");
  return notes;
}

void lower_fsdp(const LoweringContext& context, Plan& plan) {
  const int world = context.world();
  const auto reshard = parse_reshard_after_forward(context.scenario.settings.strategy.reshard_after_forward);
  // reshard_after_forward=k: the post-forward mesh is mesh.view(-1, k), groups of k consecutive ranks.
  const int k = reshard && reshard->kind == ReshardAfterForward::Kind::Ranks && reshard->ranks > 1 && reshard->ranks < world
                    ? reshard->ranks
                    : 0;
  const int first_group = static_cast<int>(plan.groups.size());
  for (int g = 0; k > 0 && g < world / k; ++g) {
    std::vector<int> members;
    for (int r = g * k; r < (g + 1) * k; ++r) members.push_back(r);
    plan.groups.push_back(std::move(members));
  }
  plan.programs.reserve(static_cast<std::size_t>(world));
  for (int rank = 0; rank < world; ++rank) {
    ProgramBuilder builder(rank, context.compute_element(), context.kernel_operands);
    if (!plan.programs.empty()) builder.reserve(plan.programs.back().ops.size(), plan.programs.back().tensors.size());
    FsdpTraining training(context, builder, k > 0 ? first_group + rank / k : -1);
    training.lower();
    plan.programs.push_back(builder.finish());
    plan.programs.back().data = {rank, world};  // DistributedSampler: rank r of world
  }
}

FsdpTraining::FsdpTraining(const LoweringContext& context, ProgramBuilder& builder, int post_forward_group)
    : LocalTraining(context, builder),
      world_(context.world()),
      post_forward_group_(post_forward_group),
      compute_bytes_(dtype_or_fp32_bytes(context.scenario.settings.strategy.fsdp_param_dtype)),
      // MixedPrecisionPolicy: a reduce_dtype equal to the param dtype is no cast (FSDPParam.init_dtype_attrs).
      reduce_bytes_(dtype_or_fp32_bytes(context.scenario.settings.strategy.fsdp_reduce_dtype.has_value()
                                            ? context.scenario.settings.strategy.fsdp_reduce_dtype
                                            : context.scenario.settings.strategy.fsdp_param_dtype)),
      compute_element_(context.compute_element()),
      reduce_element_(context.scenario.settings.strategy.fsdp_reduce_dtype
                          ? element_type_of(*context.scenario.settings.strategy.fsdp_reduce_dtype)
                          : context.compute_element()),
      gloo_(context.scenario.settings.strategy.process_group == ProcessGroupBackend::Gloo) {}

// model = Net().to(device): whole fp32 parameters, whatever param_dtype (the policy casts only the all-gathers).
void FsdpTraining::create_model() {
  slots_ = describe_parameters(model_, kFp32Bytes);
  for (auto& slot : slots_) {
    slot.tensor = b_.alloc(slot.name, slot.bytes, Category::Parameters, /*persistent=*/true, ElementType::Fp32);
    b_.add_initial_values(slot.tensor, parameter_init(model_, slot, 0, 0, slot.numel));
  }
  slot_of_ = slots_by_layer(slots_, model_.layers.size());
}

std::int64_t FsdpTraining::rank_in(int ranks) const { return b_.rank() % ranks; }

int FsdpTraining::group_of(int ranks) const { return ranks == world_ ? context_.world_group : post_forward_group_; }

void FsdpTraining::form_units() {
  const std::size_t layers = model_.layers.size();
  const FsdpUnits mode = resolved_fsdp_units(context_.scenario.settings, model_);
  const auto reshard = parse_reshard_after_forward(context_.scenario.settings.strategy.reshard_after_forward);
  if (!reshard) throw std::logic_error("fsdp: reshard_after_forward was not checked");
  param_of_slot_.assign(slots_.size(), -1);
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const ParamSlot& slot = slots_[s];
    const Layer& layer = model_.layers[static_cast<std::size_t>(slot.layer)];
    Param p;
    p.slot = static_cast<int>(s);
    std::tie(p.rows, p.row_numel) = rows_of(layer, layer.params[static_cast<std::size_t>(slot.index)]);
    p.shard_rows = div_up(p.rows, world_);
    p.local_rows = std::clamp<std::int64_t>(p.rows - b_.rank() * p.shard_rows, 0, p.shard_rows);
    param_of_slot_[s] = static_cast<int>(params_.size());
    params_.push_back(p);
  }
  // Which layers each fully_shard call claims, in model order; the root takes the rest.
  std::vector<int> unit_of_layer(layers, -1);
  for (std::size_t l = 0; l < layers; ++l) {
    const Layer& layer = model_.layers[l];
    const bool wrapped = mode == FsdpUnits::Layer ? !layer.params.empty()
                       : mode == FsdpUnits::Block ? layer.kind == LayerKind::TransformerBlock && !layer.params.empty()
                                                  : false;
    if (!wrapped) continue;
    Unit unit;
    unit.name = layer.name;
    unit_of_layer[l] = static_cast<int>(units_.size());
    units_.push_back(unit);
  }
  for (std::size_t l = 0; l < layers; ++l) {  // a tied user (lm_head) joins its owner's unit: fully_shard([wte, lm_head])
    const Layer& layer = model_.layers[l];
    if (layer.tied_layer >= 0 && unit_of_layer[l] < 0) unit_of_layer[l] = unit_of_layer[static_cast<std::size_t>(layer.tied_layer)];
  }
  std::vector<int> root_layers;
  for (std::size_t l = 0; l < layers; ++l) {
    if (unit_of_layer[l] >= 0) units_[static_cast<std::size_t>(unit_of_layer[l])].layers.push_back(static_cast<int>(l));
    else if (!model_.layers[l].params.empty()) root_layers.push_back(static_cast<int>(l));
  }
  if (!root_layers.empty()) {
    Unit root;
    root.name = "root";
    root.root = true;
    root.layers = root_layers;
    root_unit_ = static_cast<int>(units_.size());
    units_.push_back(root);
  }
  unit_of_param_.assign(params_.size(), -1);
  first_layer_units_.assign(layers, {});
  last_layer_units_.assign(layers, {});
  for (std::size_t u = 0; u < units_.size(); ++u) {
    Unit& unit = units_[u];
    unit.first_layer = unit.root ? 0 : unit.layers.front();
    unit.last_layer = unit.root ? static_cast<int>(layers) - 1 : unit.layers.back();
    unit.post_forward_ranks = post_forward_ranks(*reshard, unit.root, world_);
    for (int l : unit.layers)
      for (int s : slot_of_[static_cast<std::size_t>(l)]) {  // registration order: the post-order DFS of an nn.Sequential
        const int p = param_of_slot_[static_cast<std::size_t>(s)];
        params_[static_cast<std::size_t>(p)].offset = unit.shard_numel;
        unit.shard_numel += params_[static_cast<std::size_t>(p)].shard_numel();
        unit.params.push_back(p);
        unit_of_param_[static_cast<std::size_t>(p)] = static_cast<int>(u);
      }
    if (!unit.root) {
      first_layer_units_[static_cast<std::size_t>(unit.first_layer)].push_back(static_cast<int>(u));
      last_layer_units_[static_cast<std::size_t>(unit.last_layer)].push_back(static_cast<int>(u));
    }
  }
  input_requires_grad_.assign(layers, false);
  for (std::size_t l = 1; l < layers; ++l)
    input_requires_grad_[l] = input_requires_grad_[l - 1] || !model_.layers[l - 1].params.empty();
}

// fully_shard, unit by unit (non-root units in model order, then the root): each parameter's padded shard with its
// rows' initial values, then the unit's original parameters die. The optimizer's parameters become the shards'
// unpadded rows (the DTensor's local tensor).
void FsdpTraining::wrap() {
  form_units();
  for (const Unit& unit : units_) {
    for (int i : unit.params) {
      Param& p = params_[static_cast<std::size_t>(i)];
      const ParamSlot& slot = slots_[static_cast<std::size_t>(p.slot)];
      p.shard = b_.alloc(slot.name + " shard (Shard(0), padded)", p.shard_numel() * kFp32Bytes, Category::Parameters,
                         /*persistent=*/true, ElementType::Fp32);
      if (p.local_rows > 0)
        b_.add_initial_values(p.shard, parameter_init(model_, slot, 0, b_.rank() * p.shard_rows * p.row_numel,
                                                      p.local_rows * p.row_numel));
    }
    for (int i : unit.params) b_.release(slots_[static_cast<std::size_t>(params_[static_cast<std::size_t>(i)].slot)].tensor);
  }
  for (const Param& p : params_) {
    ParamSlot& slot = slots_[static_cast<std::size_t>(p.slot)];
    slot.tensor = p.shard;
    slot.offset = 0;
    slot.numel = p.local_rows * p.row_numel;
    slot.bytes = slot.numel * kFp32Bytes;
  }
  handles_.assign(model_.layers.size(), {});
  for (std::size_t l = 0; l < model_.layers.size(); ++l)
    for (std::size_t p = 0; p < model_.layers[l].params.size(); ++p)
      handles_[l].push_back(whole(b_.alloc(model_.layers[l].name + "." + model_.layers[l].params[p].name + " (sharded handle)",
                                           0, Category::Parameters, true)));
}

BatchShape FsdpTraining::batch_shape() const {
  // tests/gpu/pytorch_truth.py's FSDP2 loop rebinds x then y (`x = torch.randn(...)`, `y = torch.randn(...)`), and
  // under a 16-bit param_dtype the MSE target takes the output's dtype (mse_loss refuses mixed dtypes in backward).
  return BatchShape{compute_element_};
}

// The root's _pre_forward: cast_forward_inputs casts a floating input to param_dtype; layer 0's saved input keeps it.
TensorId FsdpTraining::forward_input(TensorId x) {
  if (compute_bytes_ == kFp32Bytes || model_.input_element_bytes != kFp32Bytes) return x;
  const Bytes bytes = b_.tensor(x).bytes / kFp32Bytes * compute_bytes_;
  const TensorId cast = b_.alloc("input x (cast to param_dtype)", bytes, Category::Activations, false, compute_element_);
  const OpIndex op = b_.compute(ComputeKind::Copy, "cast x to param_dtype", 0, b_.tensor(x).bytes + bytes);
  b_.set_kernel(op, Kernel::Copy, {whole(cast), whole(x)});
  return cast;
}

void FsdpTraining::bind_operands(int u) {
  if (!pass_) return;
  const Unit& unit = units_[static_cast<std::size_t>(u)];
  for (int l : unit.layers) {
    const auto& slots = slot_of_[static_cast<std::size_t>(l)];
    if (slots.empty()) continue;
    std::vector<TensorSlice> operands;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const Param& p = params_[static_cast<std::size_t>(param_of_slot_[static_cast<std::size_t>(slots[i])])];
      // The module's parameter is an as_strided view of the unsharded tensor's real rows.
      operands.push_back(p.unsharded >= 0 ? TensorSlice{p.unsharded, 0, p.rows * p.row_numel * compute_bytes_}
                                          : handles_[static_cast<std::size_t>(l)][i]);
    }
    pass_->bind_operands(static_cast<std::size_t>(l), std::move(operands));
  }
}

// TensorShape.cu split_with_sizes_copy_out_cuda_contiguous_no_cast: pack_vecs copies dst and src addresses and chunk
// sizes (k each), a block → split index per block and k + 1 cumulative sums to the device as one int64 buffer.
void FsdpTraining::split_scratch(const Unit& unit, Bytes element) {
  const FrameworkBehaviour& f = context_.behaviour;
  if (f.reduction_multiprocessors <= 0) return;
  const int chunks = world_;
  const std::int64_t k = static_cast<std::int64_t>(unit.params.size());
  std::int64_t blocks0 = 0;
  for (int i : unit.params) blocks0 += div_up(params_[static_cast<std::size_t>(i)].shard_numel() * element, 128 * 16);
  const std::int64_t max_blocks = static_cast<std::int64_t>(f.reduction_multiprocessors) *
                                  f.reduction_max_threads_per_multiprocessor / 128 * 2;
  const std::int64_t iter_factor = div_up(blocks0 * chunks, max_blocks);
  const std::int64_t chunks_per_block =
      std::min<std::int64_t>(static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(iter_factor)))), chunks);
  const std::int64_t iters_per_chunk = div_up(iter_factor, chunks_per_block);
  std::int64_t blocks = 0;
  for (int i : unit.params)
    blocks += div_up(params_[static_cast<std::size_t>(i)].shard_numel() * element, 128 * 16 * iters_per_chunk);
  const TensorId scratch = b_.alloc("split_with_sizes_copy metadata", 8 * (4 * k + 1 + blocks), Category::Temporaries,
                                    false, ElementType::Opaque);
  b_.release(scratch);
}

void FsdpTraining::unshard(int u) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  if (unit.unsharded || unit.all_gather_pending || unit.params.empty()) return;
  unit.all_gather_pending = true;
  if (world_ == 1) return;  // FSDPParamGroup.unshard: world size 1 stores an empty result, nothing is gathered
  const bool from_slices = params_[static_cast<std::size_t>(unit.params.front())].post_forward >= 0;
  const int ranks = from_slices ? unit.post_forward_ranks : world_;
  const int me = static_cast<int>(rank_in(ranks));
  const std::int64_t full = world_ * unit.shard_numel;  // elements of the flat output
  const std::int64_t chunk = full / ranks;              // each member's part
  const Bytes c = compute_bytes_;
  // _get_param_all_gather_inputs' foreach-copy fast path under a 16-bit param_dtype: the shards cast into one flat
  // buffer first, held by foreach_all_gather's locals until it returns.
  TensorId cast = -1;
  if (c != kFp32Bytes && !from_slices) {
    cast = b_.alloc("unit " + unit.name + " all-gather input (param_dtype)", unit.shard_numel * c,
                    Category::CommunicationBuffers, false, compute_element_);
    b_.set_alloc_stream(cast, fsdp_stream::kAllGatherCopyIn);
  }
  const TensorId flat = b_.alloc("unit " + unit.name + " all-gather output", full * c, Category::CommunicationBuffers,
                                 false, compute_element_);
  b_.set_alloc_stream(flat, fsdp_stream::kAllGatherCopyIn);
  // Copy-in: this rank's shards (or kept slices) into its chunk of the flat output, at each parameter's offset.
  std::vector<TensorSlice> pairs, cast_pairs;
  for (int i : unit.params) {
    const Param& p = params_[static_cast<std::size_t>(i)];
    const std::int64_t piece = p.shard_numel() * world_ / ranks, at = p.offset * world_ / ranks;
    const TensorSlice into{flat, (me * chunk + at) * c, piece * c};
    if (from_slices) {
      pairs.push_back(into);
      pairs.push_back(whole(p.post_forward));
    } else if (cast >= 0) {
      cast_pairs.push_back(TensorSlice{cast, at * c, piece * c});
      cast_pairs.push_back(whole(p.shard));
      pairs.push_back(into);
      pairs.push_back(TensorSlice{cast, at * c, piece * c});
    } else {
      pairs.push_back(into);
      pairs.push_back(whole(p.shard));
    }
  }
  const OpIndex last = b_.last_compute();
  std::vector<OpIndex> after_compute;
  if (last >= 0) after_compute.push_back(last);  // the shards the optimizer last wrote
  if (!cast_pairs.empty()) {
    const OpIndex op = b_.communication_stream_copy("cast unit " + unit.name + " shards to param_dtype", unit.shard_numel * (4 + c),
                                                    after_compute);
    b_.set_kernel(op, Kernel::Copy, std::move(cast_pairs));
  }
  const OpIndex copy_in = b_.communication_stream_copy("all-gather copy-in unit " + unit.name, 2 * chunk * c, after_compute);
  b_.set_kernel(copy_in, Kernel::Copy, std::move(pairs));
  if (gloo_) {  // ProcessGroupGloo's all_gather_into_tensor on CUDA tensors: an output-sized device temporary
    const TensorId temp = b_.alloc("unit " + unit.name + " gloo all-gather temporary", full * c,
                                   Category::CommunicationBuffers, false, compute_element_);
    b_.set_alloc_stream(temp, fsdp_stream::kAllGather);
    b_.release(temp);
  }
  unit.all_gather = b_.collective(CollectiveKind::AllGather, group_of(ranks), chunk * c,
                                  "all-gather unit " + unit.name + " (" + format_bytes(full * c) + ")", -1);
  b_.set_kernel(unit.all_gather, Kernel::None, {TensorSlice{flat, me * chunk * c, chunk * c}, whole(flat)});
  if (cast >= 0) b_.release(cast);
  unit.flat = flat;
}

void FsdpTraining::copy_out(int u, bool forward) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  if (!unit.all_gather_pending) return;
  unit.all_gather_pending = false;
  const Bytes c = compute_bytes_;
  // Under torch.no_grad a unit that is not resharded after its forward (the root by default) stays unsharded: no
  // backward ever frees it, so it lives as long as the model.
  const bool kept = context_.scenario.settings.training.no_grad && unit.post_forward_ranks == 0;
  if (world_ == 1) {  // wait_for_unshard's world-1 branch: empty_like(shard) per parameter, then a copy (a cast)
    std::vector<TensorSlice> pairs;
    for (int i : unit.params) {
      Param& p = params_[static_cast<std::size_t>(i)];
      p.unsharded = b_.alloc(slots_[static_cast<std::size_t>(p.slot)].name + " unsharded", p.shard_numel() * c,
                             Category::GatheredParameters, kept, compute_element_);
      pairs.push_back(whole(p.unsharded));
      pairs.push_back(whole(p.shard));
    }
    const OpIndex op = b_.compute(ComputeKind::Copy, "unshard unit " + unit.name + " (world 1: copy)", 0, unit.shard_numel * (4 + c));
    b_.set_kernel(op, Kernel::Copy, std::move(pairs));
  } else {
    const bool from_slices = params_[static_cast<std::size_t>(unit.params.front())].post_forward >= 0;
    const int ranks = from_slices ? unit.post_forward_ranks : world_;
    const std::int64_t chunk = world_ * unit.shard_numel / ranks;
    b_.wait(unit.all_gather);
    std::vector<TensorSlice> pairs;
    for (int i : unit.params) {  // init_all_gather_outputs / alloc_storage, group order, default stream
      Param& p = params_[static_cast<std::size_t>(i)];
      p.unsharded = b_.alloc(slots_[static_cast<std::size_t>(p.slot)].name + " unsharded", world_ * p.shard_numel() * c,
                             Category::GatheredParameters, kept, compute_element_);
      const std::int64_t piece = p.shard_numel() * world_ / ranks, at = p.offset * world_ / ranks;
      for (int j = 0; j < ranks; ++j) {
        pairs.push_back(TensorSlice{p.unsharded, j * piece * c, piece * c});
        pairs.push_back(TensorSlice{unit.flat, (j * chunk + at) * c, piece * c});
      }
    }
    split_scratch(unit, c);
    const OpIndex op = b_.compute(ComputeKind::Copy, "copy-out unit " + unit.name + " (split_with_sizes_copy)", 0,
                                  2 * world_ * unit.shard_numel * c);
    b_.set_kernel(op, Kernel::Copy, std::move(pairs));
    if (forward) {
      if (all_gather_state_ >= 0) b_.release(all_gather_state_);
      all_gather_state_ = unit.flat;
    } else {
      b_.release(unit.flat);
    }
    unit.flat = -1;
    for (int i : unit.params) {  // to_unsharded: the post-forward slices go once copied out
      Param& p = params_[static_cast<std::size_t>(i)];
      if (p.post_forward >= 0) b_.release(p.post_forward);
      p.post_forward = -1;
    }
  }
  unit.unsharded = true;
  bind_operands(u);
}

void FsdpTraining::reshard(int u, bool after_forward) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  if (!unit.unsharded) return;
  const int ranks = unit.post_forward_ranks;
  // After the forward with reshard_after_forward=k (1 < k < N): to_sharded_post_forward keeps a clone of this rank's
  // 1/k of each unsharded parameter, on the default stream.
  const bool keep_slices = after_forward && ranks > 1 && ranks < world_;
  if (keep_slices) {
    const std::int64_t me = rank_in(ranks);
    std::vector<TensorSlice> pairs;
    for (int i : unit.params) {
      Param& p = params_[static_cast<std::size_t>(i)];
      const std::int64_t piece = p.shard_numel() * world_ / ranks;
      p.post_forward = b_.alloc(slots_[static_cast<std::size_t>(p.slot)].name + " post-forward 1/" + std::to_string(ranks),
                                piece * compute_bytes_, Category::GatheredParameters, false, compute_element_);
      pairs.push_back(whole(p.post_forward));
      pairs.push_back(TensorSlice{p.unsharded, me * piece * compute_bytes_, piece * compute_bytes_});
    }
    const OpIndex op = b_.compute(ComputeKind::Copy, "keep 1/" + std::to_string(ranks) + " of unit " + unit.name, 0,
                                  2 * unit.shard_numel * world_ / ranks * compute_bytes_);
    b_.set_kernel(op, Kernel::Copy, std::move(pairs));
  }
  for (int i : unit.params) {  // free_unsharded_param: storage resized to 0, group order
    Param& p = params_[static_cast<std::size_t>(i)];
    b_.release(p.unsharded);
    p.unsharded = -1;
  }
  unit.unsharded = false;
  bind_operands(u);
}

void FsdpTraining::pre_forward(int u) {
  unshard(u);
  copy_out(u, /*forward=*/true);
}

void FsdpTraining::post_forward(int u) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  if (unit.post_forward_ranks != 0) reshard(u, /*after_forward=*/true);
  post_forward_order_.push_back(u);
}

void FsdpTraining::pre_backward(int u) {
  unshard(u);
  copy_out(u, /*forward=*/false);
  // _backward_prefetch: the unit before this one in post-forward order; `prefetch` of them stands for
  // set_modules_to_backward_prefetch with that many previous units.
  const auto at = std::find(post_forward_order_.begin(), post_forward_order_.end(), u);
  if (at == post_forward_order_.end()) return;
  const auto index = at - post_forward_order_.begin();
  for (int ahead = 1; ahead <= context_.scenario.settings.strategy.prefetch && index - ahead >= 0; ++ahead)
    unshard(post_forward_order_[static_cast<std::size_t>(index - ahead)]);
}

void FsdpTraining::before_layer_forward(int layer) {
  if (layer == 0) {  // a new forward: the root's _pre_forward
    post_forward_order_.clear();
    pre_backward_started_ = false;
    for (Unit& unit : units_) unit.post_backward_done = false;
    if (root_unit_ >= 0) pre_forward(root_unit_);
  }
  for (int u : first_layer_units_[static_cast<std::size_t>(layer)]) pre_forward(u);
}

void FsdpTraining::after_layer_forward(int layer) {
  for (int u : last_layer_units_[static_cast<std::size_t>(layer)]) post_forward(u);
  if (static_cast<std::size_t>(layer) + 1 != model_.layers.size()) return;
  if (root_unit_ >= 0) post_forward(root_unit_);
  // The root's _post_forward drops comm_ctx.all_gather_state: the last flat output dies before the loss.
  if (all_gather_state_ >= 0) b_.release(all_gather_state_);
  all_gather_state_ = -1;
}

void FsdpTraining::before_layer_backward(int layer) {
  if (!pre_backward_started_) {  // the root's pre-backward hook, on the model's output, runs first
    pre_backward_started_ = true;
    if (root_unit_ >= 0) pre_backward(root_unit_);
  }
  for (int u : last_layer_units_[static_cast<std::size_t>(layer)]) pre_backward(u);
}

Category FsdpTraining::grad_category(int, int) { return Category::Gradients; }

void FsdpTraining::take_grad(int layer, int param, TensorId grad) {
  const int p = param_of_slot_[static_cast<std::size_t>(slot_of_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(param)])];
  units_[static_cast<std::size_t>(unit_of_param_[static_cast<std::size_t>(p)])].grads.emplace_back(p, grad);
}

void FsdpTraining::post_backward(int u) {
  Unit& unit = units_[static_cast<std::size_t>(u)];
  if (unit.post_backward_done) return;
  unit.post_backward_done = true;
  reshard(u, /*after_forward=*/false);
  if (unit.grads.empty()) return;
  if (reduce_scatter_state_ >= 0) b_.release(reduce_scatter_state_);  // comm_ctx.reduce_scatter_state = None
  reduce_scatter_state_ = -1;
  // foreach_reduce reads the gradients in the group's parameter order.
  std::sort(unit.grads.begin(), unit.grads.end());
  const Bytes c = compute_bytes_, d = reduce_bytes_;
  const std::int64_t full = world_ * unit.shard_numel;
  const std::string name = "unit " + unit.name;
  const TensorId input = b_.alloc(name + " reduce-scatter input", full * d, Category::CommunicationBuffers, false, reduce_element_);
  // A narrowing reduce_dtype: chunk_cat writes a gradient-dtype buffer first and copies it into the input.
  const TensorId staging = d < c ? b_.alloc(name + " reduce-scatter input (gradient dtype)", full * c,
                                            Category::CommunicationBuffers, false, compute_element_)
                                 : -1;
  const TensorId cat_into = staging >= 0 ? staging : input;
  const Bytes cat_element = staging >= 0 ? c : d;
  // _chunk_cat's metadata (TensorShape.cu _chunk_cat_out_cuda_contiguous): sources (k), block → tensor (B), start
  // bytes and start blocks (k + 1 each), sizes, padded sizes and blocks per chunk (k each), int64.
  std::int64_t blocks = 0;
  for (const auto& [p, grad] : unit.grads) blocks += div_up(params_[static_cast<std::size_t>(p)].shard_numel() * cat_element, 128 * 16);
  if (context_.behaviour.reduction_multiprocessors > 0)
    b_.release(b_.alloc("chunk_cat metadata", 8 * (6 * static_cast<std::int64_t>(unit.grads.size()) + 2 + blocks),
                        Category::Temporaries, false, ElementType::Opaque));
  // Chunk j of the input holds every parameter's rows [jS, jS + S), zero-padded, divided by N (ReduceOp.AVG).
  std::vector<TensorSlice> pairs;
  for (const auto& [p_index, grad] : unit.grads) {
    const Param& p = params_[static_cast<std::size_t>(p_index)];
    for (int j = 0; j < world_; ++j) {
      const std::int64_t rows = std::clamp<std::int64_t>(p.rows - j * p.shard_rows, 0, p.shard_rows);
      if (rows == 0) continue;
      pairs.push_back(TensorSlice{cat_into, (j * unit.shard_numel + p.offset) * cat_element, rows * p.row_numel * cat_element});
      pairs.push_back(TensorSlice{grad, j * p.shard_rows * p.row_numel * c, rows * p.row_numel * c});
    }
  }
  const OpIndex cat = b_.compute(ComputeKind::Copy, "chunk_cat " + name + " gradients into the reduce-scatter input", 0, 2 * full * c);
  if (!pairs.empty()) {
    b_.set_kernel(cat, Kernel::Copy, std::move(pairs));
    b_.set_scale(cat, 1.0 / static_cast<double>(world_));
  }
  if (staging >= 0) {
    const OpIndex narrow = b_.compute(ComputeKind::Copy, "cast " + name + " reduce-scatter input to reduce_dtype", 0, full * (c + d));
    b_.set_kernel(narrow, Kernel::Copy, {whole(input), whole(staging)});
    b_.release(staging);
  }
  // unsharded_grads.clear() in reverse; with N > 1 the Shard(0) loop variable keeps the last one until return.
  const TensorId kept = world_ > 1 ? unit.grads.back().second : -1;
  for (auto it = unit.grads.rbegin(); it != unit.grads.rend(); ++it)
    if (it->second != kept) b_.release(it->second);
  const ParamSlot& first_slot = slots_[static_cast<std::size_t>(params_[static_cast<std::size_t>(unit.params.front())].slot)];
  const bool fresh = first_slot.grad < 0;  // zero_grad(set_to_none) dropped the previous sharded .grad
  const bool output_is_grad = d == kFp32Bytes && fresh;
  const TensorId output = b_.alloc(name + (output_is_grad ? " sharded gradients (reduce-scatter output)" : " reduce-scatter output"),
                                   unit.shard_numel * d, output_is_grad ? Category::Gradients : Category::CommunicationBuffers,
                                   output_is_grad, reduce_element_);
  b_.set_alloc_stream(output, fsdp_stream::kReduceScatter);
  if (gloo_ && world_ > 1) {  // ProcessGroupGloo reduce_scatter_tensor_coalesced: inputTensors[i].clone()
    const TensorId clone = b_.alloc(name + " gloo reduce-scatter input clone", full * d, Category::CommunicationBuffers,
                                    false, reduce_element_);
    b_.set_alloc_stream(clone, fsdp_stream::kReduceScatter);
    b_.release(clone);
  }
  OpIndex reduced = -1;
  if (world_ > 1) {
    reduced = b_.collective(CollectiveKind::ReduceScatter, context_.world_group, full * d,
                            "reduce-scatter " + name + " gradients (" + format_bytes(full * d) + ")", -1, {b_.last_compute()});
    b_.set_kernel(reduced, Kernel::None, {whole(input), whole(output)});
  } else {  // world 1: foreach_reduce copies instead of reducing
    reduced = b_.communication_stream_copy("copy " + name + " gradients (world 1)", 2 * full * d, {b_.last_compute()});
    b_.set_kernel(reduced, Kernel::Copy, {whole(output), whole(input)});
  }
  reductions_.push_back(reduced);
  TensorId result = output;
  if (d != kFp32Bytes) {  // _to_dtype_if_needed(reduce_output, orig_dtype), on the reduce-scatter stream
    result = b_.alloc(name + (fresh ? " sharded gradients (fp32)" : " reduce-scatter output (fp32)"), unit.shard_numel * kFp32Bytes,
                      fresh ? Category::Gradients : Category::CommunicationBuffers, fresh, ElementType::Fp32);
    b_.set_alloc_stream(result, fsdp_stream::kReduceScatter);
    const OpIndex cast = b_.communication_stream_copy("cast " + name + " sharded gradients to fp32", unit.shard_numel * (d + 4));
    b_.set_kernel(cast, Kernel::Copy, {whole(result), whole(output)});
    reductions_.push_back(cast);
  }
  if (kept >= 0) b_.release(kept);
  if (result != output) b_.release(output);
  unit.grads.clear();
  if (fresh) {
    // Each parameter's sharded .grad: a view at its offset, its unpadded rows.
    for (int i : unit.params) {
      const Param& p = params_[static_cast<std::size_t>(i)];
      ParamSlot& slot = slots_[static_cast<std::size_t>(p.slot)];
      slot.grad = result;
      slot.grad_is_view = true;
      slot.grad_offset = p.offset * kFp32Bytes;
      b_.retain(result);
    }
    b_.release(result);  // the views hold it now: zero_grad frees it with the last one
  } else {  // an existing sharded .grad: added into, on the reduce-scatter stream
    const OpIndex add = b_.communication_stream_copy("accumulate " + name + " reduced gradients into the sharded .grad", 3 * unit.shard_numel * 4);
    b_.set_kernel(add, Kernel::Accumulate, {TensorSlice{first_slot.grad, 0, unit.shard_numel * kFp32Bytes}, whole(result)});
    reductions_.push_back(add);
    b_.release(result);
  }
  reduce_scatter_state_ = input;
}

// _root_post_backward_final_callback: post_backward for the units not done yet (the root first, then the others in
// module order), then the last reduce-scatter input goes (comm_ctx.reduce_scatter_state = None).
void FsdpTraining::final_callback() {
  if (root_unit_ >= 0) post_backward(root_unit_);
  for (std::size_t u = 0; u < units_.size(); ++u) post_backward(static_cast<int>(u));
  if (reduce_scatter_state_ >= 0) b_.release(reduce_scatter_state_);
  reduce_scatter_state_ = -1;
}

void FsdpTraining::after_layer_backward(int layer) {
  // RegisterPostBackwardFunction on the unit's inputs: runs once its first module's backward is done, when those
  // inputs need a gradient at all.
  if (input_requires_grad_[static_cast<std::size_t>(layer)])
    for (int u : first_layer_units_[static_cast<std::size_t>(layer)]) post_backward(u);
  // Backward stops at the first layer whose input needs no gradient (ModelPass); the engine's final callbacks run
  // there, before backward() returns and drops its seed.
  if (!input_requires_grad_[static_cast<std::size_t>(layer)]) final_callback();
}

void FsdpTraining::after_backward() {
  const OpIndex wait = b_.compute(ComputeKind::Copy, "FSDP: wait for the reduce-scatters", 0, 0);
  for (OpIndex op : reductions_) b_.add_dep(wait, op);
  reductions_.clear();
}

}  // namespace shardscope
