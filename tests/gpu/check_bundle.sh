#!/usr/bin/env bash
# Proves a GPU bundle portable: every binary in BUNDLE/bin resolves each library it needs from BUNDLE/lib, glibc's
# family or the driver, in an empty environment (env -i) with LD_LIBRARY_PATH set to the bundle only; the CUDA
# runtime, cuBLAS and NCCL (found in PyTorch's environment on the GPU machine) may resolve elsewhere or not at all.
# A library resolved from any other folder (a Debian -dev package's, /usr/local) is a failure: the bare GPU machine
# would not have it.
#
# usage: check_bundle.sh BUNDLE
set -uo pipefail
bundle=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/gpu/bundle_rules.sh
source "$here/bundle_rules.sh"
failures=0
checked=0
for binary in "$bundle"/bin/*; do
  [ -f "$binary" ] || continue
  checked=$((checked + 1))
  listing=$(env -i LD_LIBRARY_PATH="$bundle/lib" /usr/bin/ldd "$binary" 2>&1) || { echo "FAIL: ldd $binary: $listing"; failures=$((failures + 1)); continue; }
  while read -r name arrow path _; do
    case "$name" in linux-vdso.so.*|/*) continue ;; esac
    [ "$arrow" = "=>" ] || continue
    if provided_by_cuda "$name"; then continue; fi
    if [ "$path" = "not" ]; then
      echo "FAIL: $(basename "$binary") needs $name: not found in the bundle"
      failures=$((failures + 1))
    elif provided_by_system "$name"; then
      continue
    elif [ "$(dirname "$path")" != "$bundle/lib" ] && [ "$(dirname "$path")" != "$bundle/bin" ]; then
      echo "FAIL: $(basename "$binary") takes $name from $path, outside the bundle"
      failures=$((failures + 1))
    fi
  done <<<"$listing"
done
[ "$checked" -gt 0 ] || { echo "FAIL: no binaries in $bundle/bin"; exit 1; }
if [ "$failures" -gt 0 ]; then echo "$failures problem(s) in $bundle"; exit 1; fi
echo "ok: $checked binaries in $bundle resolve every library from the bundle, glibc, the driver or the CUDA libraries"
