#!/usr/bin/env bash
# The JavaScript package's tests: builds the module (wasm/build.sh), runs
# `node --test wasm/test/` against it, and ends with one line
# "N passed, M failed" counted from the test runner's TAP summary
# (cancelled tests count as failed).  Exit status 0 only if all passed.
#   wasm/test/run.sh [BUILD_DIR]     (default build-wasm)
set -uo pipefail
cd "$(dirname "$0")/../.."

dir=$(bash wasm/build.sh "$@" | tail -n 1) && [[ -f $dir/shardpsi.wasm ]] ||
    { echo "wasm/test/run.sh: wasm/build.sh failed" >&2; echo "0 passed, 1 failed"; exit 1; }
export SHARDPSI_WASM_DIR=$dir   # test this build, not a stale wasm/dist/

tap=$(mktemp) || exit 2
trap 'rm -f "$tap"' EXIT
# The test files directly in wasm/test/ (node --test on the directory would also run every
# .mjs under wasm/test/browser/: the browser test, run by itself with
# `node wasm/test/browser/run-browser.mjs`).
shopt -s nullglob
files=(wasm/test/*.js wasm/test/*.cjs wasm/test/*.mjs)
shopt -u nullglob
# One file a CPU at a time: node's default is one fewer than the CPUs, which
# on 2 cores runs the files one by one, mostly on one core.
node --test --test-concurrency="$(nproc)" \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "${files[@]}"
status=$?

count() { sed -n "s/^# $1 \\([0-9][0-9]*\\)\$/\\1/p" "$tap" | tail -n 1; }
pass=$(count pass) fail=$(count fail) cancelled=$(count cancelled)
if [[ -z $pass || -z $fail ]]; then
    echo "wasm/test/run.sh: no test summary from node --test" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
fail=$((fail + ${cancelled:-0}))
[[ $status -ne 0 && $fail -eq 0 ]] && fail=1   # the runner failed outside any test
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
