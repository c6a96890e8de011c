// cuda_backend_plugin: dlopen each candidate path until one opens and has a matching entry point.
#include "exec/backends/cuda_plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace shardscope::exec {
namespace {

std::string executable_dir() {
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : exe.parent_path().string();
}

std::string dl_error_text() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown dlopen error";
}

// Opens one candidate; fills plugin.entry_points or returns why not.
std::string try_open(const std::string& path, CudaPlugin& plugin) {
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return dl_error_text();
  using EntryFunction = const CudaBackendEntryPoints* (*)();
  auto entry = reinterpret_cast<EntryFunction>(dlsym(library, kCudaBackendEntryPointSymbol));
  if (entry == nullptr) {
    const std::string why = dl_error_text();
    dlclose(library);
    return why;
  }
  const CudaBackendEntryPoints* points = entry();
  const CudaBackendEntryPoints expected{};
  if (points == nullptr || points->abi_version != expected.abi_version || points->plan_size != expected.plan_size ||
      points->options_size != expected.options_size || points->inventory_size != expected.inventory_size ||
      points->detect_gpus == nullptr || points->make_backend == nullptr) {
    dlclose(library);
    return "built from another version of ShardScope (its entry points do not match this program's)";
  }
  plugin.entry_points = points;
  return {};
}

CudaPlugin load_plugin() {
  CudaPlugin plugin;
  std::string tried;
  for (const std::string& path : cuda_backend_library_candidates(std::getenv("SHARDSCOPE_CUDA_BACKEND"), executable_dir())) {
    const std::string why = try_open(path, plugin);
    if (plugin.entry_points != nullptr) return plugin;
    tried += (tried.empty() ? "" : "; ") + path + " (" + why + ")";
  }
  plugin.error = std::string("cannot load the CUDA backend (") + kCudaBackendLibraryName + "): tried " +
                 (tried.empty() ? "no path (no $SHARDSCOPE_CUDA_BACKEND, /proc/self/exe unreadable)" : tried);
  return plugin;
}

}  // namespace

std::vector<std::string> cuda_backend_library_candidates(const char* env_value, const std::string& exe_dir) {
  std::vector<std::string> paths;
  if (env_value != nullptr && *env_value != '\0') paths.emplace_back(env_value);
  if (!exe_dir.empty()) {
    paths.push_back((std::filesystem::path(exe_dir) / kCudaBackendLibraryName).string());
    paths.push_back((std::filesystem::path(exe_dir) / ".." / "lib" / kCudaBackendLibraryName).string());
  }
  return paths;
}

const CudaPlugin& cuda_backend_plugin() {
  static const CudaPlugin plugin = load_plugin();  // thread-safe initialisation
  return plugin;
}

}  // namespace shardscope::exec
