#!/bin/sh
# Usage: run_if_cuda.sh PROBE [--expect-exit N --expect-text T] COMMAND...
# Runs COMMAND when PROBE finds a usable cuda device, else exits 77 (ctest
# SKIP_RETURN_CODE) with the probe's reason. With --expect-exit, succeeds only
# when COMMAND exits N and its output contains T.
probe="$1"; shift
reason=$("$probe") || { echo "SKIP: $reason"; exit 77; }
expect=""; text=""
if [ "$1" = "--expect-exit" ]; then expect="$2"; shift 2; fi
if [ "$1" = "--expect-text" ]; then text="$2"; shift 2; fi
if [ -z "$expect" ]; then exec "$@"; fi
out=$("$@" 2>&1); rc=$?
printf '%s\n' "$out"
if [ "$rc" != "$expect" ]; then echo "FAIL: exit code $rc, expected $expect"; exit 1; fi
case "$out" in *"$text"*) ;; *) echo "FAIL: output does not mention '$text'"; exit 1;; esac
echo "PASS: exit code $rc and the output names '$text'"
