#!/usr/bin/env bash
# Issue 22's simulate rows, end to end in one process: `shardscope-cli simulate` of a 96-block transformer of GPT-3
# 175B's shape (h 12288, 96 heads, context 2048) on 8 pipeline stages (1F1B, 8 micro-batches) × ranks/8 data-parallel
# replicas with ZeRO-1 in each stage's DP group, bf16, batch 8, one step; CPU time (user + system) and peak RSS from
# /usr/bin/time, median of 3. bench_simulate's BM_SimulateEndToEnd_Gpt3Shape_Pp8DpZero1 times the same pipeline.
# TP=T (environment) makes it 3-D, issue 39's row: tensor parallelism T × 8 stages × ranks/(8T) replicas (simulate
# pads GPT-2's vocabulary of 50257 as Megatron-LM does, to a multiple of 128 × T).
# It prints what it measured on: the build type (the CMake cache beside the CLI's build folder), the CPU and the load,
# since a Debug build or a loaded shared machine changes the figure several times over.
# Usage: [TP=8] tests/bench/simulate_scale.sh [path/to/shardscope-cli] [ranks...]   (default: build/app/shardscope-cli 1024 4096)
set -euo pipefail
cli=${1:-build/app/shardscope-cli}
shift || true
ranks=("$@")
[ ${#ranks[@]} -gt 0 ] || ranks=(1024 4096)
tp=${TP:-1}
vocab=50257
config=$(mktemp --suffix=.json)
trap 'rm -f "$config"' EXIT
echo "{\"model_type\": \"gpt2\", \"n_embd\": 12288, \"n_layer\": 96, \"n_head\": 96, \"vocab_size\": $vocab, \"n_positions\": 2048}" > "$config"
# (The same 1,024-rank job: 0.43 s CPU on an idle AMD EPYC, 0.76 s on an Intel Xeon at load average 5.5; 2 vCPUs each.)
cache=$(dirname "$(readlink -f "$cli")")
while [ "$cache" != / ] && [ ! -f "$cache/CMakeCache.txt" ]; do cache=$(dirname "$cache"); done
if [ -f "$cache/CMakeCache.txt" ]; then
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$cache/CMakeCache.txt")
  flags=$(sed -n "s/^CMAKE_CXX_FLAGS_$(tr '[:lower:]' '[:upper:]' <<< "${build_type:-none}"):STRING=//p" "$cache/CMakeCache.txt")
  echo "build: ${build_type:-(no type)} (${flags:-no flags}), compiler $(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache/CMakeCache.txt"), $cache"
else
  echo "build: unknown (no CMakeCache.txt above $cli)"
fi
echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores online"
echo "tp: $tp"
echo "load: $(uptime)"
for world in "${ranks[@]}"; do
  runs=()
  for _ in 1 2 3; do
    # %U + %S: CPU seconds; %M: peak RSS in KiB.
    if ! output=$(/usr/bin/time -f "%U %S %M" "$cli" simulate --model "hf:$config" --strategy pp-1f1b --world "$world" \
        --stages 8 --micro-batches 8 --dp-zero 1 --tp "$tp" --dtype bf16 --batch 8 --steps 1 --json 2>&1 >/dev/null); then
      echo "$world ranks: failed: $(head -1 <<< "$output")"
      continue 2
    fi
    runs+=("$(tail -1 <<< "$output" | awk '{printf "%.2f %.0f", $1 + $2, $3 / 1024}')")
  done
  median=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
  echo "$world ranks: $(awk '{print $1 " s CPU, " $2 " MiB peak RSS"}' <<< "$median") (median of 3; runs: $(IFS=';'; echo "${runs[*]}"))"
done
echo "load after: $(uptime)"
