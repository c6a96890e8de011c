#!/usr/bin/env bash
# CTest (label cli): the GPU bundle made from this build is portable (check_bundle.sh), run_gpu_checks.sh runs
# end to end from it with a "no GPU" result for every GPU part and exit 0 (on a machine without a GPU), and a dry run
# of the checks on the cpu backend (two strategies) passes, so the script's own logic is tested before GPU time.
#
# usage: check_gpu_bundle.sh BUILD_DIR WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
bash "$here/make_bundle.sh" "$work/bundle" --build-dir "$build"
bash "$here/check_bundle.sh" "$work/bundle"

status=0
bash "$work/bundle/run_gpu_checks.sh" "$work/out" || status=$?
python3 - "$work/out/report.json" "$status" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
status = int(sys.argv[2])
checks = {c["name"]: c for c in report["checks"]}
gpu_parts = ["gpu_tests", "strategies", "pytorch_reference_single", "pytorch_reference_ddp", "cublas_workspace",
             "step_time_single", "step_time_ddp", "out_of_memory", "trace", "pytorch_gpt2", "strategies_gpt2",
             "gpt2_checkpointing"]
missing = [n for n in gpu_parts if n not in checks]
assert not missing, f"the report lacks {missing}"
if report["gpu"] == "available":
    print("a GPU is here: the report's checks are real; status", status)
    sys.exit(0)
assert status == 0, f"without a GPU run_gpu_checks.sh must exit 0, not {status}"
for name in gpu_parts:
    c = checks[name]
    assert c["status"] == "skipped" and c["summary"].startswith("no GPU: "), f"{name}: {c}"
assert checks["libraries"]["status"] == "passed", checks["libraries"]
print("no GPU: every GPU part skipped with the reason:", report["gpu"])
PY

SHARDSCOPE_GPU_CHECKS_BACKEND=cpu SHARDSCOPE_GPU_CHECKS_STRATEGIES=ddp,pp-1f1b bash "$work/bundle/run_gpu_checks.sh" "$work/dry"
python3 - "$work/dry/report.json" <<'PY'
import json, sys
checks = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
runs = checks["strategies"]["figures"]["runs"]
assert checks["strategies"]["status"] == "passed" and len(runs) == 4, checks["strategies"]
assert all(r["phases_compared"] > 0 for r in runs), runs
assert checks["trace"]["status"] == "passed", checks["trace"]
for name, runs in (("strategies_gpt2", 4), ("gpt2_checkpoint_full", 4), ("gpt2_checkpoint_selective", 4)):
    assert checks[name]["status"] == "passed" and len(checks[name]["figures"]["runs"]) == runs, checks[name]
# PyTorch on the CPU here (skipped where python3 cannot import torch): the GPU machine's GPT-2 comparison's own logic.
assert checks["pytorch_gpt2"]["status"] in ("passed", "skipped"), checks["pytorch_gpt2"]
print("dry run on the cpu backend: strategies, trace and GPT-2 checks:", checks["pytorch_gpt2"]["status"])
PY
ls "$work/out" "$work/dry"
