#!/bin/sh
# Screenshots of every shipped scenario (assets/scenarios) and every step of every lesson (assets/lessons, answers
# revealed), into OUTDIR: what a change that must not alter the picture (a refactor) is diffed with, before and after
# (compare_screenshots A.png B.png for each file). Runs its own Xvfb; about a second or two a picture.
# Usage: screenshot_all.sh SHARDSCOPE OUTDIR [WIDTHxHEIGHT]      (default 1600x900)
set -eu
app=$1 out=$2 size=${3:-1600x900}
root=$(cd "$(dirname "$0")/../.." && pwd)
width=${size%x*} height=${size#*x}
command -v Xvfb >/dev/null 2>&1 || { echo "SKIPPED: Xvfb is not installed"; exit 77; }
mkdir -p "$out"
display_file=$(mktemp)
Xvfb -displayfd 3 -screen 0 "${width}x${height}x24" -nolisten tcp 3>"$display_file" 2>/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$display_file"' EXIT
while [ ! -s "$display_file" ]; do sleep 0.05; done
export DISPLAY=":$(head -n 1 "$display_file")"
shot() {  # NAME ARGS...
  name=$1; shift
  "$app" --width "$width" --height "$height" "$@" --screenshot "$out/$name.png" >/dev/null 2>"$out/$name.stderr" ||
    echo "$name: exit $? ($(tail -n 1 "$out/$name.stderr"))"
}
shot builtin
for scenario in "$root"/assets/scenarios/*.json; do
  shot "scenario-$(basename "$scenario" .json)" --scenario "$scenario"
done
for lesson in "$root"/assets/lessons/*.json; do
  id=$(basename "$lesson" .json)
  steps=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['steps']))" "$lesson")
  step=1
  while [ "$step" -le "$steps" ]; do
    shot "lesson-$id-$step" --lesson "$id" --lesson-step "$step" --reveal
    step=$((step + 1))
  done
done
ls "$out"/*.png | wc -l | sed 's/$/ screenshots/'
