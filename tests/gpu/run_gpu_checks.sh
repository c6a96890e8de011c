#!/usr/bin/env bash
# Runs every GPU check from a bundle (tests/gpu/make_bundle.sh) and writes OUT/report.json, OUT/report.md, the
# recorded trace and the command log (gpu_checks.py says what each check does). Needs only the bundle, python3 and,
# for the PyTorch comparisons, PyTorch with CUDA (PYTHON=/path/to/python3 to pick the environment that has it).
# The CUDA runtime, cuBLAS and NCCL are not in the bundle: they are taken from PyTorch's nvidia-* packages when
# that Python has them, else from /usr/local/cuda.
#
# usage: run_gpu_checks.sh OUT
set -uo pipefail
script=$(readlink -f "$0")
bundle=$(cd "$(dirname "$script")/.." && pwd)
out=${1:?usage: run_gpu_checks.sh OUT}
python=${PYTHON:-python3}

# Folders holding the CUDA libraries inside the Python environment (site-packages/nvidia/**/lib*).
cuda_dirs=$("$python" "$bundle/scripts/cuda_library_dirs.py" 2>/dev/null)
export LD_LIBRARY_PATH="$bundle/lib${cuda_dirs:+:$cuda_dirs}:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHON="$python"
exec python3 "$bundle/scripts/gpu_checks.py" "$bundle" "$out"
