#!/usr/bin/env bash
# Builds the portable GPU bundle: the CLI, the CUDA backend and the GPU tests (Release, sm_90) with every shared
# library they need that is not glibc's family, the NVIDIA driver or the CUDA runtime / cuBLAS / NCCL, plus
# run_gpu_checks.sh and what it runs. The GPU machine starts bare (no Debian libraries) and takes at most 64 MiB,
# so the bundle must carry fmt, OpenBLAS (+ gfortran, quadmath), libstdc++ and libgcc_s itself. The CUDA libraries
# are not carried (cuBLAS alone is ~700 MiB): run_gpu_checks.sh finds them in PyTorch's environment on the GPU
# machine (its nvidia-* wheels) or under /usr/local/cuda. The window is left out: GLFW needs X11/OpenGL libraries
# that belong to the display, and the GPU machine has no display (its trace comes back instead; see
# run_gpu_checks.sh).
#
# usage: tests/gpu/make_bundle.sh OUTDIR [--build-dir DIR]
#   --build-dir DIR  bundle an existing build (any build type) instead of configuring build-bundle/ (Release,
#                    CUDA architecture 90, no window, no benchmarks); the CTest portability test uses this.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=""
build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$(cd "$2" && pwd); shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) if [ -z "$out" ]; then out=$1; shift; else echo "make_bundle.sh: unexpected argument '$1'" >&2; exit 2; fi ;;
  esac
done
[ -n "$out" ] || { echo "usage: make_bundle.sh OUTDIR [--build-dir DIR]" >&2; exit 2; }

if [ -z "$build" ]; then
  build="$root/build-bundle"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DSHARDSCOPE_WITH_GUI=OFF -DSHARDSCOPE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" --target shardscope-cli test_cuda_backend
fi
cli="$build/app/shardscope-cli"
[ -x "$cli" ] || { echo "make_bundle.sh: no $cli (build the CLI first)" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/scripts" "$out/assets"
cp "$cli" "$out/bin/"
[ -x "$build/tests/test_cuda_backend" ] && cp "$build/tests/test_cuda_backend" "$out/bin/"
# The CUDA backend plugin, where this build makes one (the CLI opens it from its own folder).
for plugin in "$build"/app/libshardscope_backend_cuda.so; do [ -f "$plugin" ] && cp "$plugin" "$out/bin/"; done
strip --strip-unneeded "$out"/bin/* 2>/dev/null || true

# Libraries the system of the GPU machine provides (glibc's family, the driver) or that come from PyTorch's
# environment there (CUDA runtime, cuBLAS, NCCL): the same list check_bundle.sh accepts.
# shellcheck source=tests/gpu/bundle_rules.sh
source "$here/bundle_rules.sh"
copy_needed_libraries() {
  ldd "$1" | while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if provided_by_system "$name" || provided_by_cuda "$name"; then continue; fi
    [ -f "$path" ] || { echo "make_bundle.sh: $1 needs $name, not found here" >&2; exit 1; }
    [ -f "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
  done
}
for binary in "$out"/bin/*; do copy_needed_libraries "$binary"; done
# OpenBLAS is opened with dlopen by the CPU backend's first GEMM (engine/exec/cpu/blas_gemm.cpp), so ldd does not
# list it: carry it and what it needs (gfortran, quadmath), found where the dynamic loader finds it here.
# (awk reads to the end: exiting at the first match would leave ldconfig writing to a closed pipe, and pipefail would
# fail the script whenever it had not finished first.)
openblas=$(ldconfig -p | awk '/libopenblas\.so\.0 .*x86-64/ && !found {print $NF; found = 1}')
[ -f "$openblas" ] || { echo "make_bundle.sh: libopenblas.so.0 not found here (install libopenblas0)" >&2; exit 1; }
cp -L "$openblas" "$out/lib/libopenblas.so.0"
copy_needed_libraries "$out/lib/libopenblas.so.0"

cp "$here/run_gpu_checks.sh" "$here/gpu_checks.py" "$here/pytorch_reference.py" "$here/cublas_workspace.py" \
   "$here/bundle_rules.sh" "$here/check_bundle.sh" "$here/cuda_library_dirs.py" "$out/scripts/"
cp "$root/tests/torch/check_gpt2_against_torch.py" "$root/tests/torch/safetensors_io.py" "$root/tests/torch/torch_or_skip.py" \
   "$here/gpt2_step_time.py" \
   "$out/scripts/"
cp -r "$root/tests/torch/gpt2-tiny-no-dropout" "$out/scripts/"
cp -r "$root/assets/scenarios" "$out/assets/"
mkdir -p "$out/assets/models" && cp -r "$root/assets/models/gpt2-tiny" "$root/assets/models/gpt2" "$out/assets/models/"
ln -s scripts/run_gpu_checks.sh "$out/run_gpu_checks.sh"
{
  echo "ShardScope GPU bundle"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "build: $build ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt"))"
  echo "cuda architectures: $(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:STRING=//p' "$build/CMakeCache.txt")"
  echo "binaries: $(cd "$out/bin" && echo *)"
  echo "libraries: $(cd "$out/lib" && echo *)"
} >"$out/MANIFEST"
size=$(du -sbL "$out" | cut -f1)
echo "bundle $out: $((size / 1024 / 1024)) MiB ($size bytes): $(cd "$out/bin" && echo *)"
if [ "$size" -gt $((64 * 1024 * 1024)) ]; then
  echo "make_bundle.sh: the bundle is over 64 MiB, more than travels to the GPU machine" >&2
  exit 1
fi
