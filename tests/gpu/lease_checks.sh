#!/usr/bin/env bash
# One GPU lease, one command: every check in order of what it is worth, under a budget of seconds, and everything
# measured packed into OUT/results.tgz (a lease returns at most 8 files). Run from the repository's root on the GPU
# machine with the bundle carried (tests/gpu/make_bundle.sh BUNDLE):
#   1. the gpu-labelled C++ tests (test_cuda_backend: the CUDA backend against the CPU backend, tensor parallelism too);
#   2. time_checks.py: our executor and PyTorch on the held-out jobs (issue 40), PyTorch's also under its profiler
#      (GPU busy and idle per step, the autocast jobs' traces kept: pytorch_truth.profiled_steps);
#   3. record_overhead.py: the Python recorder's cost on a GPU step (issue 37);
#   4. tests/python/test_record_cuda.py: the recorder on CUDA, the MLP, DDP and 2-stage pipeline scripts recorded
#      and held against our pytorch-2 prediction at every phase of every rank (issue 37), log record-cuda.log;
#   5. time_checks.py's profile part: calibrate --backend cuda (issue 40), then PyTorch's profile
#      (python -m shardscope.calibrate --passes 2) in what is left of its share;
#   6. run_gpu_checks.sh: the bundle's whole report, in what time is left.
# Dry run on the build machine: SHARDSCOPE_GPU_CHECKS_BACKEND=cpu PYTHON=/usr/bin/python3 lease_checks.sh B OUT 120.
#
# usage: tests/gpu/lease_checks.sh BUNDLE OUT BUDGET_S
set -uo pipefail
bundle=$(cd "${1:?usage: lease_checks.sh BUNDLE OUT BUDGET_S}" && pwd)
out=${2:?usage: lease_checks.sh BUNDLE OUT BUDGET_S}
budget=${3:?usage: lease_checks.sh BUNDLE OUT BUDGET_S}
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
backend=${SHARDSCOPE_GPU_CHECKS_BACKEND:-cuda}
results="$out/results"
mkdir -p "$results"
started=$SECONDS
left() { echo $((budget - (SECONDS - started))); }
step() { echo "[$((SECONDS - started)) s] $*" | tee -a "$results/lease.log"; }

cuda_dirs=$("$python" "$here/cuda_library_dirs.py" 2>/dev/null)
export LD_LIBRARY_PATH="$bundle/lib${cuda_dirs:+:$cuda_dirs}:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
{ nvidia-smi 2>&1; "$python" -c 'import torch, transformers; print(torch.__version__, transformers.__version__)' 2>&1
  cat "$bundle/MANIFEST"; } >"$results/machine.txt"

step "1. gpu tests"
timeout 150 "$bundle/bin/test_cuda_backend" >"$results/gpu-tests.log" 2>&1
step "   exit $? ($(grep -E '^\[  (PASSED|FAILED) |^\[  SKIPPED \] [0-9]' "$results/gpu-tests.log" | tr '\n' ' '))"

step "2. executor and PyTorch on the held-out jobs"
timeout 240 "$python" "$here/time_checks.py" "$bundle/bin/shardscope-cli" "$results/time" --parts executor,pytorch \
  --backend "$backend" >>"$results/lease.log" 2>&1
step "   exit $?"

step "3. recorder overhead"
timeout 150 "$python" "$here/record_overhead.py" "$results/record-overhead.json" --steps 12 >>"$results/lease.log" 2>&1
step "   exit $?"

# The test prints, per job and rank, each phase's recorded and predicted allocated; it skips (exit 0) without CUDA.
step "4. recorder against the pytorch-2 prediction on CUDA"
SHARDSCOPE_CLI="$bundle/bin/shardscope-cli" timeout 90 "$python" "$here/../python/run_tests.py" test_record_cuda.py \
  >"$results/record-cuda.log" 2>&1
step "   exit $? ($(grep -E '^(OK|FAILED)' "$results/record-cuda.log" | tail -n 1))"

profile_s=$(( $(left) - 60 < 220 ? $(left) - 60 : 220 ))
step "5. calibrate --backend cuda (at most $profile_s s)"
if [ "$profile_s" -gt 30 ]; then
  "$python" "$here/time_checks.py" "$bundle/bin/shardscope-cli" "$results/time-profile" --parts profile --passes 2 \
    --profile-timeout "$profile_s" --backend "$backend" >>"$results/lease.log" 2>&1
  step "   exit $?"
fi
torch_profile_s=$(( $(left) - 90 < 200 ? $(left) - 90 : 200 ))
if [ "$torch_profile_s" -gt 30 ] && [ "$backend" = cuda ]; then
  step "5b. python -m shardscope.calibrate --passes 2 (at most $torch_profile_s s)"
  PYTHONPATH="$here/../../python" timeout "$torch_profile_s" "$python" -m shardscope.calibrate --passes 2 \
    --out "$results/time-profile/h200-torch.json" >>"$results/lease.log" 2>&1
  step "   exit $?"
fi

step "6. the bundle's checks ($(left) s left)"
if [ "$(left)" -gt 40 ]; then
  SHARDSCOPE_GPU_CHECKS_DEADLINE_S=$(( $(left) - 25 )) PYTHON="$python" timeout $(( $(left) - 10 )) \
    "$bundle/run_gpu_checks.sh" "$results/checks" >>"$results/lease.log" 2>&1
  step "   exit $?"
fi
tar czf "$out/results.tgz" -C "$out" results
cp "$results/lease.log" "$out/lease.log"
step "packed $(du -h "$out/results.tgz" | cut -f1)"
