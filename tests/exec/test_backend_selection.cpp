// Backend selection: --backend names, and what happens when the CUDA backend cannot run here (not built, or no
// usable GPU): BackendUnavailableError with the inventory's reason, before any trace event. Where the CUDA backend
// plugin is looked for, in order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/run_helpers.h"
#include "exec/backends/backend_factory.h"
#include "exec/backends/cuda_plugin_loader.h"
#include "run/gpu_inventory.h"

namespace shardscope::exec {
namespace {

TEST(BackendSelection, NamesRoundTrip) {
  EXPECT_EQ(backend_kind_from_name("cpu"), BackendKind::Cpu);
  EXPECT_EQ(backend_kind_from_name("cuda"), BackendKind::Cuda);
  EXPECT_EQ(backend_kind_from_name("rocm"), std::nullopt);
  EXPECT_EQ(backend_kind_name(BackendKind::Cuda), "cuda");
}

TEST(BackendSelection, InventorySaysWhyThereIsNoGpu) {
  const GpuInventory inventory = detect_gpus();
  if (inventory.usable()) GTEST_SKIP() << "this machine has a usable GPU";
  EXPECT_TRUE(inventory.gpus.empty());
  if (inventory.cuda_built) {
    // ../shared/STACK.md: 35 without a driver, 100 with a driver and no device.
    EXPECT_EQ(inventory.reason.rfind("no usable CUDA GPU: cudaGetDeviceCount", 0), 0u) << inventory.reason;
  } else {
    EXPECT_EQ(inventory.reason.rfind("this build has no CUDA backend", 0), 0u) << inventory.reason;
  }
}

TEST(BackendSelection, CudaWithoutAUsableGpuIsRefusedBeforeAnyEvent) {
  const GpuInventory inventory = detect_gpus();
  if (inventory.usable()) GTEST_SKIP() << "this machine has a usable GPU";
  const ResolvedScenario scenario =
      resolve_scenario(shardscope::testing::make("mlp:2x8", StrategyKind::Single, 1, 4, AccountingMode::Exact));
  const Plan plan = lower_validated_plan(scenario);
  VectorTraceSink sink;
  ExecutionOptions options;
  options.backend = BackendKind::Cuda;
  try {
    execute(scenario, plan, sink, options);
    FAIL() << "expected BackendUnavailableError";
  } catch (const BackendUnavailableError& e) {
    EXPECT_EQ(std::string(e.what()), inventory.reason);
  }
  EXPECT_TRUE(sink.events().empty());
}

TEST(BackendSelection, CpuBackendRefusesSeveralNodes) {
  const ResolvedScenario scenario =
      resolve_scenario(shardscope::testing::make("mlp:2x8", StrategyKind::Single, 1, 4, AccountingMode::Exact));
  const Plan plan = lower_validated_plan(scenario);
  VectorTraceSink sink;
  ExecutionOptions options;
  options.multinode.nnodes = 2;
  EXPECT_THROW(execute(scenario, plan, sink, options), BackendUnavailableError);
}

// The contract a bundle script relies on: $SHARDSCOPE_CUDA_BACKEND, then beside the executable, then ../lib.
TEST(BackendSelection, CudaPluginIsLookedForInTheEnvironmentThenBesideTheProgramThenInLib) {
  using Paths = std::vector<std::string>;
  EXPECT_EQ(cuda_backend_library_candidates("/opt/cuda-plugin.so", "/usr/local/bin"),
            (Paths{"/opt/cuda-plugin.so", "/usr/local/bin/libshardscope_backend_cuda.so",
                   "/usr/local/bin/../lib/libshardscope_backend_cuda.so"}));
  EXPECT_EQ(cuda_backend_library_candidates("", "/app"),
            (Paths{"/app/libshardscope_backend_cuda.so", "/app/../lib/libshardscope_backend_cuda.so"}));
  EXPECT_EQ(cuda_backend_library_candidates(nullptr, ""), Paths{});
}

}  // namespace
}  // namespace shardscope::exec
