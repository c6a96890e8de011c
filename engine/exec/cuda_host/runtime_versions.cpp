// cuda_version_text, nccl_version_text.
#include "exec/cuda_host/runtime_versions.h"

namespace shardscope::exec {

std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string nccl_version_text(int version) {
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." + std::to_string(version % 100);
}

}  // namespace shardscope::exec
