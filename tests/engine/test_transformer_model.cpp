// Transformer models: preset parameter counts against published figures, hf: configs (GPT-2, Llama, GQA),
// bad configs, layer shapes and FLOPs against the Megatron formula.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/hf_config_files.h"
#include "model/model.h"
#include "model/transformer.h"
#include "scenario/scenario.h"

namespace shardscope {
namespace {

using testing::TempConfigDir;

// GPT-2 by hand: wte V·h + wpe P·h + per block (ln_1 2h, c_attn 3h²+3h, c_proj h²+h, ln_2 2h, c_fc 4h²+4h,
// c_proj 4h²+h = 12h² + 13h) + ln_f 2h; lm_head tied to wte, counted once. V = 50257, P = 1024.
std::int64_t gpt2_params(std::int64_t h, std::int64_t layers) {
  const std::int64_t vocab = 50257, positions = 1024;
  return vocab * h + positions * h + layers * (12 * h * h + 13 * h) + 2 * h;
}

// Llama-2 by hand (no GQA, untied): embed_tokens V·h + lm_head V·h + per block (q,k,v,o 4h², gate/up/down 3·h·i,
// two RMSNorms 2h) + final norm h. V = 32000.
std::int64_t llama2_params(std::int64_t h, std::int64_t i, std::int64_t layers) {
  const std::int64_t vocab = 32000;
  return 2 * vocab * h + layers * (4 * h * h + 3 * h * i + 2 * h) + h;
}

// Published counts: model.num_parameters() of the Hugging Face checkpoints (openai-community/gpt2: "124M",
// 124,439,808; gpt2-medium 354,823,168; gpt2-large 774,030,080; gpt2-xl 1,557,611,200; meta-llama/Llama-2-7b-hf
// 6,738,415,616; Llama-2-13b-hf 13,015,864,320). Each also equals the hand formula above.
TEST(TransformerPresets, PublishedParameterCounts) {
  struct Case { const char* name; std::int64_t published; std::int64_t by_hand; };
  const Case cases[] = {
      {"gpt2", 124'439'808, gpt2_params(768, 12)},
      {"gpt2-medium", 354'823'168, gpt2_params(1024, 24)},
      {"gpt2-large", 774'030'080, gpt2_params(1280, 36)},
      {"gpt2-xl", 1'557'611'200, gpt2_params(1600, 48)},
      {"llama-2-7b", 6'738'415'616, llama2_params(4096, 11008, 32)},
      {"llama-2-13b", 13'015'864'320, llama2_params(5120, 13824, 40)},
  };
  for (const auto& c : cases) {
    const Model m = parse_model_spec(c.name);
    EXPECT_EQ(m.parameter_count(), c.published) << c.name;
    EXPECT_EQ(c.by_hand, c.published) << c.name;
    EXPECT_TRUE(m.language_model);
    EXPECT_NE(m.display_name.find(c.name), std::string::npos) << m.display_name;
  }
}

TEST(TransformerPresets, LayerGranularityAndNames) {
  const Model m = parse_model_spec("gpt2");
  // embeddings, 12 blocks, ln_f, lm_head
  ASSERT_EQ(m.layers.size(), 15u);
  EXPECT_EQ(m.transformer_block_count(), 12);
  EXPECT_EQ(m.layers[4].name, "h.3");
  EXPECT_EQ(m.layers[4].params[2].name, "attn.c_attn.weight");
  EXPECT_EQ(m.layers[4].params[2].numel, 768 * 3 * 768);
  EXPECT_EQ(m.layers.back().name, "lm_head");
  EXPECT_TRUE(m.layers.back().params.empty());  // tied to wte
  EXPECT_EQ(m.layers.back().tied_layer, 0);
  EXPECT_EQ(m.seq, 1024);  // seq 0 → n_positions
  EXPECT_EQ(m.output_numel, 1024 * 50257);
  const Model llama = parse_model_spec("llama-2-7b");
  EXPECT_EQ(llama.seq, 4096);  // max_position_embeddings
  EXPECT_EQ(llama.layers[1].name, "layers.0");
  EXPECT_EQ(llama.layers.back().params.at(0).numel, 32000 * 4096);  // untied lm_head
}

// Megatron-LM (Narayanan et al. 2021, Section 5.1): a block's forward is 24·s·h² + 4·s²·h FLOPs per sample,
// the LM head 2·s·h·V. GPT-2 has n_inner = 4h, so its blocks match the formula exactly.
TEST(TransformerPresets, BlockFlopsFollowMegatron) {
  ModelOptions options;
  options.seq = 512;
  const Model m = parse_model_spec("gpt2-medium", options);
  const double s = 512, h = 1024, vocab = 50257;
  EXPECT_DOUBLE_EQ(m.layers[1].forward_flops_per_sample, 24 * s * h * h + 4 * s * s * h);
  // Selective recomputation re-runs QKᵀ only (it stops before the product with V): 2·s²·h.
  EXPECT_DOUBLE_EQ(m.layers[1].attention_recompute_flops_per_sample, 2 * s * s * h);
  EXPECT_DOUBLE_EQ(m.layers.back().forward_flops_per_sample, 2 * s * h * vocab);
}

// TinyLlama-1.1B's config (hidden 2048, 32 heads, 4 KV heads, intermediate 5632, 22 layers, vocab 32000): its
// published count is 1,100,048,384. By hand: 2·32000·2048 + 22·(q 2048² + k,v 2·256·2048 + o 2048²
// + 3·2048·5632 + 2·2048) + 2048, with k/v width 2048/32·4 = 256.
TEST(HfConfig, LlamaWithGroupedQueryAttention) {
  TempConfigDir dir;
  const std::string path = dir.write("tinyllama.json", testing::llama_config_json(2048, 32, 4, 5632, 22, 32000, 2048));
  const Model m = parse_model_spec("hf:" + path);
  const std::int64_t h = 2048, kv = 256, i = 5632;
  const std::int64_t by_hand = 2 * 32000 * h + 22 * (h * h + 2 * kv * h + h * h + 3 * h * i + 2 * h) + h;
  EXPECT_EQ(by_hand, 1'100'048'384);
  EXPECT_EQ(m.parameter_count(), 1'100'048'384);
  EXPECT_EQ(m.layers[1].params[1].name, "self_attn.k_proj.weight");
  EXPECT_EQ(m.layers[1].params[1].numel, kv * h);
  // FLOPs: q/k/v 2·s·h·(h + 2·256), o 2·s·h², SwiGLU 3·2·s·h·i, attention core 4·s²·h.
  const double s = 2048;
  EXPECT_DOUBLE_EQ(m.layers[1].forward_flops_per_sample,
                   2 * s * h * (h + 2 * 256) + 2 * s * h * h + 6 * s * h * i + 4 * s * s * h);
  EXPECT_NE(m.display_name.find("4 KV"), std::string::npos) << m.display_name;
}

// A GPT-2 style file with tie_word_embeddings false gets its own lm_head (V·h more); n_inner null means 4h.
TEST(HfConfig, Gpt2StyleUntiedAndDefaults) {
  TempConfigDir dir;
  const std::string tied = dir.write("tied.json", testing::gpt2_config_json(64, 4, 2, 100, 32));
  const std::string untied = dir.write("untied.json", testing::gpt2_config_json(64, 4, 2, 100, 32, R"(, "tie_word_embeddings": false)"));
  const std::int64_t h = 64;
  const std::int64_t by_hand = 100 * h + 32 * h + 2 * (12 * h * h + 13 * h) + 2 * h;
  EXPECT_EQ(parse_model_spec("hf:" + tied).parameter_count(), by_hand);
  EXPECT_EQ(parse_model_spec("hf:" + untied).parameter_count(), by_hand + 100 * h);
  EXPECT_EQ(parse_model_spec("hf:" + tied).layers[1].params[8].numel, h * 4 * h);  // mlp.c_fc.weight
}

std::string resolve_error(const std::string& spec, int seq = 0) {
  Scenario s;
  s.model.spec = spec;
  s.training.seq = seq;
  try {
    resolve_scenario(s);
  } catch (const ScenarioError& error) {
    return error.field() + " | " + error.what();
  }
  return "accepted";
}

TEST(HfConfig, BadConfigsNameTheFileAndKey) {
  TempConfigDir dir;
  const std::string missing = dir.write("missing.json", R"({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "vocab_size": 10, "n_positions": 8})");
  const std::string not_json = dir.write("broken.json", R"({"model_type": "gpt2", )");
  const std::string bert = dir.write("bert.json", R"({"model_type": "bert", "hidden_size": 8})");
  const std::string no_type = dir.write("notype.json", R"({"n_embd": 8})");
  const std::string bad_heads = dir.write("heads.json", testing::gpt2_config_json(64, 5, 2, 100, 32));
  const std::string bad_kv = dir.write("kv.json", testing::llama_config_json(64, 4, 3, 128, 2, 100, 32));
  const std::string negative = dir.write("negative.json", testing::gpt2_config_json(64, 4, -2, 100, 32));
  const struct { std::string spec; std::vector<std::string> wanted; } cases[] = {
      {"hf:" + missing, {"model.spec", missing, "'n_embd' is missing"}},
      {"hf:" + not_json, {"model.spec", not_json, "not valid JSON"}},
      {"hf:" + bert, {"model.spec", bert, "model_type", "bert"}},
      {"hf:" + no_type, {"model.spec", no_type, "'model_type' is missing"}},
      {"hf:" + bad_heads, {"model.spec", "'n_head' must divide"}},
      {"hf:" + bad_kv, {"model.spec", "'num_key_value_heads' must divide"}},
      {"hf:" + negative, {"model.spec", "'n_layer' must be positive"}},
      {"hf:/nonexistent/config.json", {"model.spec", "/nonexistent/config.json: cannot be opened"}},
      {"gpt3", {"model.spec", "unknown model 'gpt3'", "gpt2-medium"}},
  };
  for (const auto& c : cases) {
    const std::string message = resolve_error(c.spec);
    for (const auto& part : c.wanted) EXPECT_NE(message.find(part), std::string::npos) << c.spec << " → " << message;
  }
}

// Issue 18: a config from anywhere never crashes or hangs: values quoted bounded (a value nested 100,000 deep crashed
// the CLI and the window in the message's dump()), nesting bounded when parsing, numbers past a double and integers
// past int64 named, only regular files read (hf:/dev/zero never returned).
TEST(HfConfig, HostileConfigsEndInAnError) {
  TempConfigDir dir;
  const std::string deep_value = dir.write("deep-value.json", R"({"model_type": "gpt2", "n_embd": )" + std::string(50, '[') + "1" +
                                                                  std::string(50, ']') + "}");
  const std::string deep_file = dir.write("deep-file.json", R"({"model_type": "gpt2", "n_embd": )" + std::string(100000, '[') +
                                                                std::string(100000, ']') + "}");
  const std::string overflow = dir.write("overflow.json", R"({"model_type": "gpt2", "n_embd": 1e400})");
  const std::string unsigned_max = dir.write("u64.json", R"({"model_type": "gpt2", "n_embd": 18446744073709551615})");
  const std::string long_type = dir.write("type.json", R"({"model_type": ")" + std::string(100000, 'x') + R"("})");
  const struct { std::string spec; std::vector<std::string> wanted; } cases[] = {
      {"hf:" + deep_value, {"model.spec", deep_value, "'n_embd' must be a positive integer (got an array of 1 item)"}},
      {"hf:" + deep_file, {"model.spec", deep_file, "n_embd[0]", "nested more than 64 levels deep"}},
      {"hf:" + overflow, {"model.spec", overflow, "is not valid JSON: line 1, column 34: the number 1e400 is out of range"}},
      {"hf:" + unsigned_max, {"model.spec", unsigned_max, "'n_embd' is too large (got 18446744073709551615)"}},
      {"hf:/dev/zero", {"model.spec", "/dev/zero: is not a regular file"}},
  };
  for (const auto& c : cases) {
    const std::string message = resolve_error(c.spec);
    for (const auto& part : c.wanted) EXPECT_NE(message.find(part), std::string::npos) << c.spec << " → " << message.substr(0, 300);
    EXPECT_LT(message.size(), 400u) << message.substr(0, 400);
  }
  const std::string type = resolve_error("hf:" + long_type);
  EXPECT_NE(type.find("'model_type' is \"xxxx"), std::string::npos) << type.substr(0, 200);
  EXPECT_LT(type.size(), 300u);
}

TEST(TransformerScenario, SequenceLengthAndCheckpointChecks) {
  EXPECT_NE(resolve_error("gpt2", 1025).find("training.seq | training.seq: sequence length 1025 exceeds gpt2's 1024"),
            std::string::npos);
  EXPECT_NE(resolve_error("mlp:2x8", 16).find("training.seq"), std::string::npos);
  Scenario s;
  s.training.checkpoint = CheckpointMode::Full;  // the default model is an MLP: nothing to recompute
  try {
    resolve_scenario(s);
    ADD_FAILURE() << "checkpointing an MLP was accepted";
  } catch (const ScenarioError& error) {
    EXPECT_EQ(error.field(), "training.checkpoint");
  }
  s.model.spec = "gpt2";
  s.training.seq = 128;
  const ResolvedScenario r = resolve_scenario(s);
  EXPECT_EQ(r.model.seq, 128);
  EXPECT_EQ(r.settings.training.loss, LossKind::CrossEntropy);  // a causal LM's loss
  EXPECT_EQ(r.model.activation_element_bytes, 4);
  s.training.dtype = Dtype::Bf16;  // 16-bit activations, the precision of Korthikanti et al.'s Table 2
  EXPECT_EQ(resolve_scenario(s).model.activation_element_bytes, 2);
}

// Very large plans group each block's parameters into one tensor: same bytes, and the report says so.
// gpt2 has 148 parameter tensors (wte, wpe, 12 × 12, ln_f weight and bias); 148 × 2048 ranks is past the
// 2^16 tensors resolve_scenario allows before grouping, 148 × 2 is not.
TEST(TransformerScenario, HugePlansGroupBlockParameters) {
  Scenario s;
  s.model.spec = "gpt2";
  s.cluster.world = 2;
  const ResolvedScenario small = resolve_scenario(s);
  EXPECT_EQ(small.model.parameter_tensor_count(), 2 + 12 * 12 + 2);
  s.cluster.world = 2048;
  const ResolvedScenario huge = resolve_scenario(s);
  EXPECT_EQ(huge.model.parameter_tensor_count(), 2 + 12 + 2);
  EXPECT_EQ(huge.model.parameter_count(), 124'439'808);
  bool noted = false;
  for (const auto& note : huge.model.notes) noted |= note.find("one flat tensor") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(TransformerPresets, AssetsDirectoryCanBeOverridden) {
  ::setenv("SHARDSCOPE_ASSETS_DIR", "/nonexistent-assets", 1);
  const std::string message = resolve_error("gpt2");
  ::unsetenv("SHARDSCOPE_ASSETS_DIR");
  EXPECT_NE(message.find("/nonexistent-assets/models/gpt2/config.json: cannot be opened"), std::string::npos) << message;
  EXPECT_EQ(resolve_error("gpt2"), "accepted");
}

}  // namespace
}  // namespace shardscope
