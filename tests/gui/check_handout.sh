#!/bin/sh
# The handout export: `shardscope --lesson ID --path short --export DIR` writes one picture per step of the lesson's
# short path and an index.html naming each, with the lesson's title; skips (77) without Xvfb.
# Usage: check_handout.sh SHARDSCOPE SHARDSCOPE_CLI LESSON OUTDIR   (the step count comes from `lessons --json`)
set -eu
app=$1 cli=$2 lesson=$3 out=$4
steps=$("$cli" lessons --json | python3 -c "import json, sys; print(next(l['short_path_steps'] for l in json.load(sys.stdin)['lessons'] if l['id'] == sys.argv[1]))" "$lesson")
command -v Xvfb >/dev/null 2>&1 || { echo "SKIPPED: Xvfb is not installed"; exit 77; }
rm -rf "$out"
display_file=$(mktemp)
Xvfb -displayfd 3 -screen 0 1920x1080x24 -nolisten tcp 3>"$display_file" 2>/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$display_file"' EXIT
while [ ! -s "$display_file" ]; do sleep 0.05; done
DISPLAY=":$(head -n 1 "$display_file")" "$app" --lesson "$lesson" --path short --width 1920 --height 1080 --export "$out"
pictures=$(ls "$out"/step-*.png | wc -l)
[ "$pictures" -eq "$steps" ] || { echo "FAILED: $pictures pictures, expected $steps"; exit 1; }
images=$(grep -c '<img src="step-' "$out/index.html")
[ "$images" -eq "$steps" ] || { echo "FAILED: index.html shows $images pictures, expected $steps"; exit 1; }
grep -q "<h1>" "$out/index.html" || { echo "FAILED: no title in index.html"; exit 1; }
echo "ok: $pictures pictures and index.html in $out"
