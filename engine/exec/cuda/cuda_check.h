// Turns CUDA runtime, cuBLAS and NCCL status codes into exceptions that name the call, the code and its text.
// CUDA backend only (needs the CUDA toolkit and NCCL headers).
#pragma once
#include "exec/exec_layer.h"
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace shardscope::exec::cuda {

// "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version"
std::string cuda_error_text(cudaError_t error);

void check_cuda(cudaError_t error, const char* what);
void check_cublas(cublasStatus_t status, const char* what);
void check_nccl(ncclResult_t result, const char* what);

}  // namespace shardscope::exec::cuda
