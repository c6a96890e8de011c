// A model = an ordered stack of layers plus its input and output sizes; built from a spec string.
// Usage:
//   Model m = parse_model_spec("mlp:20x2000");   // throws ModelSpecError with a readable message
//   Model g = parse_model_spec("gpt2");          // a preset from assets/models/, or "hf:PATH/config.json"
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/layer.h"
#include "model/transformer_config.h"

namespace shardscope {

// Activation recomputation of transformer blocks (Korthikanti et al. 2022, "Reducing Activation Recomputation
// in Large Transformer Models"): none; selective (the attention core only); full (each block keeps its input).
// A model-level switch, as Hugging Face's model.gradient_checkpointing_enable().
enum class CheckpointMode { None, Selective, Full };

// Whose code a GPT-2 / Llama model's blocks are: Megatron-LM's layer, counted as Korthikanti et al. 2022 count it
// (one op per block, what the executors run), or transformers' modules op by op (GPT2Attention, GPT2MLP, Conv1D,
// LlamaAttention, LlamaMLP, LlamaRMSNorm, rotary positions, ForCausalLMLoss), as an engineer's HF script runs them.
enum class TransformerImplementation { Megatron, Hf };
// How attention runs: eager (the s×s scores materialised, softmax saved), sdpa (F.scaled_dot_product_attention, which
// picks a fused kernel that keeps logsumexp instead of probabilities), flash (that kernel forced: 16-bit only).
enum class AttentionKind { Eager, Sdpa, Flash };

struct ModelOptions {
  bool inplace_relu_set = false;  // when false, each model uses its own default (mlp: out-of-place, vgg16: in-place as torchvision)
  bool inplace_relu = false;
  int seq = 0;                            // transformer sequence length; 0: the model's max positions
  std::int64_t activation_element_bytes = 4;  // 4 for fp32, 2 for fp16 / bf16 activations
  CheckpointMode checkpoint = CheckpointMode::None;
  // Transformers: one flat parameter tensor per block instead of HF's state_dict tensors (12 per GPT-2 block,
  // 9 per Llama block). Same bytes and FLOPs; fewer ops, for plans with very many ranks.
  bool group_block_params = false;
  // Pipelines: the last stage holds its own copy of tied word embeddings (Megatron-LM's
  // word_embeddings_for_head), so lm_head gets its own weight even where the config ties it.
  bool untie_embeddings = false;
  TransformerImplementation implementation = TransformerImplementation::Megatron;
  std::optional<AttentionKind> attention;  // unset: the implementation's own (hf: sdpa; megatron: eager)
  // Transformers: the vocabulary is rounded up to a multiple of this (Megatron-LM's padding for its
  // vocabulary-parallel layers; 1: the config's vocab_size as it is).
  std::int64_t vocab_multiple = 1;
};

struct Model {
  std::string spec;               // as given: "mlp:20x2000", "vgg16", "gpt2", "hf:path/config.json"
  std::string display_name;       // "20 × Linear(2000, 2000)"
  std::vector<Layer> layers;
  std::int64_t input_numel = 0;   // per sample
  std::int64_t output_numel = 0;  // per sample (classes for cross-entropy; seq × vocab for a language model)
  std::int64_t input_element_bytes = 4;       // 8 for token ids (int64)
  std::int64_t activation_element_bytes = 4;  // bytes of one activation element (dtype of the forward)
  std::int64_t target_positions = 1;          // cross-entropy targets per sample (seq for a language model)
  bool language_model = false;    // trained with cross-entropy over the vocabulary at every position
  int seq = 0;                    // transformers: the sequence length the layers were sized for
  CheckpointMode checkpoint = CheckpointMode::None;
  // A tensor-parallel shard of an MLP under sequence parallelism (model/tensor_parallel_shard.h): the tp ranks its
  // rows are split over outside the tensor-parallel regions, whose collectives the pass emits
  // (training/model_pass_sequence_parallel.cpp). 1: none.
  int sequence_parallel_ranks = 1;
  std::optional<TransformerConfig> transformer;  // transformers: the config the layers were built from (executors)
  TransformerImplementation implementation = TransformerImplementation::Megatron;  // transformers only
  AttentionKind attention = AttentionKind::Eager;                                  // transformers only
  std::vector<std::string> notes; // stated beside every figure (what is approximated, what is overridden)

  std::int64_t parameter_count() const;
  std::int64_t parameter_tensor_count() const;
  bool has_unknown_workspaces() const;
  int transformer_block_count() const;
};

class ModelSpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The sequence length asked for does not fit the model (resolve_scenario reports it as training.seq).
class SequenceLengthError : public ModelSpecError {
 public:
  using ModelSpecError::ModelSpecError;
};

Model parse_model_spec(const std::string& spec, const ModelOptions& options = {});

// Builders, one per model family (model/mlp.cpp, model/vgg16.cpp; transformers in model/transformer.h).
Model build_mlp(int layer_count, std::int64_t width, bool relu, bool inplace_relu);
Model build_vgg16(bool inplace_relu);
// `params:N[:BLOCKS]`: N parameters in BLOCKS equal blocks, nothing else (model/parameter_blocks.cpp).
Model build_parameter_blocks(std::int64_t parameter_count, int block_count);
Model parse_parameter_blocks(const std::string& spec, const std::vector<std::string>& parts);

}  // namespace shardscope
