// Test helper: writes Hugging Face style config.json files into a fresh temporary folder.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace shardscope::testing {

class TempConfigDir {
 public:
  TempConfigDir() {
    static int counter = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("shardscope-models-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
  }
  ~TempConfigDir() { std::filesystem::remove_all(dir_); }
  TempConfigDir(const TempConfigDir&) = delete;
  TempConfigDir& operator=(const TempConfigDir&) = delete;

  // Writes `text` to NAME and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  const std::filesystem::path& path() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// A GPT-2 style config.json: n_embd h, n_head a, n_layer L, vocab V, n_positions P; n_inner left null.
inline std::string gpt2_config_json(int h, int a, int layers, int vocab, int positions, const std::string& extra = "") {
  return R"({"model_type": "gpt2", "n_embd": )" + std::to_string(h) + R"(, "n_head": )" + std::to_string(a) +
         R"(, "n_layer": )" + std::to_string(layers) + R"(, "vocab_size": )" + std::to_string(vocab) +
         R"(, "n_positions": )" + std::to_string(positions) + R"(, "n_inner": null)" + extra + "}";
}

// A Llama style config.json.
inline std::string llama_config_json(int h, int a, int kv, int intermediate, int layers, int vocab, int positions) {
  return R"({"model_type": "llama", "hidden_size": )" + std::to_string(h) + R"(, "num_attention_heads": )" +
         std::to_string(a) + R"(, "num_key_value_heads": )" + std::to_string(kv) + R"(, "intermediate_size": )" +
         std::to_string(intermediate) + R"(, "num_hidden_layers": )" + std::to_string(layers) + R"(, "vocab_size": )" +
         std::to_string(vocab) + R"(, "max_position_embeddings": )" + std::to_string(positions) + "}";
}

}  // namespace shardscope::testing
