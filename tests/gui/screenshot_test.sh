#!/bin/sh
# GUI screenshot test: renders the window under Xvfb on a scenario and checks its pixels for the category colours
# the scenario must show. Skips (exit 77) where Xvfb is not installed, saying so.
# Usage: screenshot_test.sh SHARDSCOPE CHECKER OUT.png [gui args --] RRGGBB:MIN...
set -eu
app=$1 checker=$2 out=$3
shift 3
gui_args=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do gui_args="$gui_args $1"; shift; done
[ $# -gt 0 ] && shift
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "SKIPPED: xvfb-run is not installed (apt-get install xvfb xauth libgl1-mesa-dri)"
  exit 77
fi
rm -f "$out"
# shellcheck disable=SC2086
xvfb-run -a -s "-screen 0 1600x900x24" "$app" $gui_args --screenshot "$out"
"$checker" "$out" "$@"
