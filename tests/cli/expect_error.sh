#!/usr/bin/env bash
# Runs a command that must fail: checks its exit code and that stderr names the problem.
# Usage: expect_error.sh EXPECTED_CODE "TEXT IN STDERR" COMMAND...
expected_code=$1; expected_text=$2; shift 2
stderr=$("$@" 2>&1 >/dev/null); code=$?
if [ "$code" -ne "$expected_code" ]; then echo "exit code $code, expected $expected_code; stderr: $stderr"; exit 1; fi
if ! grep -qF -- "$expected_text" <<<"$stderr"; then echo "stderr does not mention '$expected_text': $stderr"; exit 1; fi
echo "ok: exit $code, '$stderr'"
