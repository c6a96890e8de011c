// Built-in transformer presets: Hugging Face Hub config.json files shipped under assets/models/<name>/.
// The assets folder is compiled in (SHARDSCOPE_ASSETS_DIR from CMake) and can be moved with the environment
// variable of the same name, so an installed binary can point at its own copy.
#include <cstdlib>
#include <filesystem>

#include "model/transformer.h"

#ifndef SHARDSCOPE_ASSETS_DIR
#define SHARDSCOPE_ASSETS_DIR "assets"
#endif

namespace shardscope {

const std::vector<std::string>& model_preset_names() {
  static const std::vector<std::string> names = {"gpt2-tiny", "gpt2",       "gpt2-medium", "gpt2-large",
                                                 "gpt2-xl",   "llama-2-7b", "llama-2-13b"};
  return names;
}

std::string model_preset_names_joined() {
  std::string text;
  for (const auto& name : model_preset_names()) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::string assets_dir() {
  if (const char* env = std::getenv("SHARDSCOPE_ASSETS_DIR"); env != nullptr && *env != '\0') return env;
  return SHARDSCOPE_ASSETS_DIR;
}

std::optional<std::string> model_preset_config_path(const std::string& name) {
  for (const auto& preset : model_preset_names())
    if (preset == name) return (std::filesystem::path(assets_dir()) / "models" / name / "config.json").string();
  return std::nullopt;
}

}  // namespace shardscope
