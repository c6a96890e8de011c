// libFuzzer target: a Hugging Face config.json's text through parse_hf_config (GPT-2 and Llama-style configs,
// `--model hf:PATH`). A bad config must give the reader's named error (ModelSpecError); nothing else may escape,
// crash or trip ASan / UBSan. Seeds: assets/models/*/config.json, tests/cli/gpt2-missing-key.json.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model/model.h"
#include "model/transformer_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace shardscope;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const TransformerConfig config = parse_hf_config(text, "fuzz/config.json");
    if (config.heads != 0) {
      (void)config.head_dim();
      (void)config.kv_width();
    }
  } catch (const ModelSpecError&) {
  }
  return 0;
}
