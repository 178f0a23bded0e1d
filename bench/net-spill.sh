#!/usr/bin/env bash
# A network round past its memory budget (PROTOCOL.md §20): wall time and
# each side's peak resident memory of one `shardpsi server` / `shardpsi
# client` round (bench/net-round.sh: TLS 1.3, raw setup, the client's rows)
# at several sizes with --memory BUDGET on both sides, and the same round
# in memory at one size, in one run.
#
# Both sides get BUDGET at every size: the client reads the server's raw
# setup from its file through a window as it matches (PROTOCOL.md §20).
#
# Usage: bench/net-spill.sh [--build DIR] [--sizes "1000000 4000000 16000000"]
#                           [--memory 256M] [--inmem 4000000] [--dir SCRATCH]
# Scratch: the runs and messages, about 200 bytes a value of the largest
# size on each side ($TMPDIR, or --dir).
set -euo pipefail
build=build-release sizes="1000000 4000000 16000000" memory=256M inmem=4000000 dir=
while [[ $# -gt 0 ]]; do
    case $1 in
        --build) build=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --inmem) inmem=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        *) echo "usage: $0 [--build DIR] [--sizes LIST] [--memory B] [--inmem N] [--dir D]" >&2
           exit 2 ;;
    esac
done
psi=$build/cli/shardpsi
[ -x "$psi" ] || { echo "net-spill: no $psi (ninja -C $build)" >&2; exit 2; }
here=$(dirname "$0")
[ -n "$dir" ] && export TMPDIR=$dir
rows=()

# row N SERVER_MEMORY CLIENT_MEMORY: one round; appends its table row.
row() {
    local n=$1 sm=$2 cm=$3 log
    log=$(mktemp)
    SERVER_OPTS="${sm:+--memory $sm}" CLIENT_OPTS="${cm:+--memory $cm}" \
        bash "$here/net-round.sh" "$n" "$psi" >"$log" 2>&1 || { cat "$log"; exit 1; }
    local t s c
    t=$(sed -n 's/.*result OK.*round \([0-9.]*\) s/\1/p' "$log")
    s=$(sed -n 's/.*shardpsi server: answered.*peak memory \([0-9.]*\) MiB.*/\1/p' "$log")
    c=$(sed -n 's/.*shardpsi client: .* in the intersection (server.*peak memory \([0-9.]*\) MiB.*/\1/p' "$log")
    rows+=("$(printf '| %s | %s | %s | %s s | %s | %s MiB | %s MiB |' "$n" "${sm:-in memory}" \
        "${cm:-in memory}" "$t" "$(awk -v n="$n" -v t="$t" 'BEGIN { printf "%d", n / t }')" \
        "$s" "$c")")
    echo "${rows[-1]}"
    rm -f "$log"
}

echo "| values a side | server --memory | client --memory | round | values/s | server peak | client peak |"
echo "|---|---|---|---|---|---|---|"
for n in $sizes; do
    row "$n" "$memory" "$memory"
done
row "$inmem" "" ""
