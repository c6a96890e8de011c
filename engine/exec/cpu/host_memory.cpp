// available_host_memory: the "MemAvailable: N kB" line of /proc/meminfo.
#include "exec/cpu/host_memory.h"

#include <fstream>
#include <sstream>
#include <string>

namespace shardscope::exec {

std::optional<Bytes> available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    Bytes kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace shardscope::exec
