#!/usr/bin/env bash
# `shardpsi bench --psijs on` at 100 values: the psi.js column runs (Node child,
# bench/psijs-bench.mjs), its results pass the checks, and it appears in the
# table, bench.json and bench.svg.  Skipped (exit 77) when node or
# vectors/node_modules/@openmined/psi.js is missing.
#
# Usage: tests/cli/test_bench_psijs.sh PSI_BINARY REPO_ROOT
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 PSI_BINARY REPO_ROOT" >&2
    exit 2
fi
psi=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # the test runs it from $root
root=$2
if [ ! -f "$root/vectors/node_modules/@openmined/psi.js/package.json" ]; then
    echo "skipped: $root/vectors/node_modules/@openmined/psi.js is not installed"
    exit 77
fi
if ! command -v node >/dev/null; then
    echo "skipped: no node on PATH"
    exit 77
fi

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# From the root of the source tree, where the default --psijs-script is.
(cd "$root" && "$psi" bench --values 100 --psijs on --s-seconds 0.05 --out-dir "$tmp/out") \
    >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
if [ "$rc" -ne 0 ]; then
    fail "shardpsi bench --psijs on: exit code $rc"
    sed 's/^/    /' "$tmp/stdout" "$tmp/stderr"
    exit 1
fi
grep -Eq '^psi\.js: @openmined/psi\.js 2\.0\.6 in Node v[0-9]' "$tmp/stdout" ||
    fail "no 'psi.js: @openmined/psi.js 2.0.6 in Node' line"
for op in setup_raw setup_gcs request response intersection association; do
    # every column has a figure: no "-" before the peak columns
    grep -Eq "^$op( +[0-9][0-9,.]*){10} " "$tmp/stdout" || fail "the $op row lacks a figure"
    grep -Eq "^$op round 1/1: psi\.js [0-9,]+ values/s " "$tmp/stderr" ||
        fail "no psi.js progress line for $op"
done
grep -q '^psi.js has no association table' "$tmp/stdout" || fail "no note on association"
grep -q '>psi.js</text>' "$tmp/out/bench.svg" || fail "bench.svg has no psi.js series"
if command -v python3 >/dev/null; then
    python3 - "$tmp/out/bench.json" <<'PY' || fail "bench.json lacks psi.js figures"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["machine"]["psijs"] == "2.0.6", j["machine"]
for o in j["ops"]:
    f = o["rounds"][0]["psijs"]
    assert f["values_per_s"] > 0 and f["count"] > 0, (o["op"], f)
    assert o["median"]["one_thread_per_psijs"] > 0, o["op"]
PY
fi
# The value files of the child are gone.
if grep -q 'cannot remove' "$tmp/stderr"; then
    fail "the temporary value files were not removed"
fi
echo "test_bench_psijs: $failures failed"
[ "$failures" -eq 0 ]
