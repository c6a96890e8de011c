#!/usr/bin/env bash
# Every example scenario shipped under assets/scenarios must load, lower, validate, print and simulate to the end.
cli=$1; dir=$2; status=0; count=0
for file in "$dir"/*.json; do
  count=$((count + 1))
  if ! "$cli" memory "$file" --json > /dev/null; then echo "FAILED: $file"; status=1; fi
  if ! "$cli" simulate "$file" --json | grep -q '"error": null'; then echo "FAILED simulate: $file"; status=1; fi
done
[ "$count" -gt 0 ] || { echo "no scenarios in $dir"; exit 1; }
echo "$count scenarios checked"; exit $status
