# Which shared libraries the GPU bundle does not carry, sourced by make_bundle.sh and check_bundle.sh (one list).
# glibc's family and the NVIDIA driver are the GPU machine's own; the CUDA runtime, cuBLAS(Lt) and NCCL come from
# PyTorch's environment there (nvidia-* wheels) or /usr/local/cuda, found by run_gpu_checks.sh.
provided_by_system() {
  case "$1" in
    linux-vdso.so.*|ld-linux-x86-64.so.*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*) return 0 ;;
    libcuda.so.*|libnvidia-*.so.*) return 0 ;;
  esac
  return 1
}
provided_by_cuda() {
  case "$1" in
    libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libnccl.so.*) return 0 ;;
  esac
  return 1
}
