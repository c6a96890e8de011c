#!/bin/sh
# GUI screenshot test: renders the window under Xvfb on a scenario and checks its pixels for the category colours
# the scenario must show. Skips (exit 77) where Xvfb is not installed, saying so.
# Usage: screenshot_test.sh SHARDSCOPE CHECKER OUT.png [gui args --] RRGGBB:MIN...
# Xvfb is started here rather than through xvfb-run: -displayfd lets the server pick a free display itself (no race
# between tests started at once), and xvfb-run's clean-up (`rm -r` of its Xauthority folder) fails now and then
# with exit 5 after a program that exits at once, failing a test that passed.
set -eu
app=$1 checker=$2 out=$3
shift 3
gui_args=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do gui_args="$gui_args $1"; shift; done
[ $# -gt 0 ] && shift
if ! command -v Xvfb >/dev/null 2>&1; then
  echo "SKIPPED: Xvfb is not installed (apt-get install xvfb xauth libgl1-mesa-dri)"
  exit 77
fi
rm -f "$out"
display_file=$(mktemp)
Xvfb -displayfd 3 -screen 0 1600x900x24 -nolisten tcp 3>"$display_file" 2>/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$display_file"' EXIT
tries=0
while [ ! -s "$display_file" ]; do  # the server writes its display number once it accepts connections
  tries=$((tries + 1))
  if [ "$tries" -gt 200 ] || ! kill -0 "$server" 2>/dev/null; then echo "Xvfb did not start"; exit 1; fi
  sleep 0.05
done
# shellcheck disable=SC2086
DISPLAY=":$(head -n 1 "$display_file")" "$app" $gui_args --screenshot "$out"
"$checker" "$out" "$@"
