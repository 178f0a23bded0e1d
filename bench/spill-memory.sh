#!/usr/bin/env bash
# Sets larger than memory (PROTOCOL.md §20): peak resident memory and time of
# the offline server and client steps under a memory budget, at several set
# sizes, and of the same steps in memory at one size, in one run, so that
# the figures compare: whether memory stays flat as the set grows, and what
# spilling costs.  For each size N (--sizes) it runs, with --memory BUDGET:
#   setup     a raw setup of N values with its permutation
#   request   the client's request of N values (reveal on)
#   response  the server's response to it (reveal on), and to a count-only
#             request (reveal off: the runs are sorted and merged)
#   match     the client's rows of the intersection from that response,
#             against a raw setup of --match-server values (default
#             1,000,000; match reads a raw setup through a window, so its
#             size does not count against the budget), made once with the
#             server's key
# and the same steps at --inmem values with a budget that holds them
# (in memory), then checks that both ways wrote the same bytes at that size.
# --steps picks which (default: all four).  Prints a table: size, step,
# budget, seconds, values per second, peak RSS (MiB) and its bytes a value.
#
# Usage: bench/spill-memory.sh [--build DIR] [--sizes "1000000 4000000"]
#                              [--memory 256M] [--inmem N] [--steps "..."]
#                              [--match-server M] [--dir SCRATCH]
# Scratch space: about 130 bytes a value of the largest size (inputs,
# messages and the runs).
set -euo pipefail
build=build-release sizes="1000000 4000000 16000000" memory=256M inmem=4000000 dir=
steps="setup request response response-count match" mserver=1000000
while [[ $# -gt 0 ]]; do
    case $1 in
        --build) build=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --inmem) inmem=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --match-server) mserver=$2; shift 2 ;;
        *) echo "usage: $0 [--build DIR] [--sizes LIST] [--memory B] [--inmem N]" \
                "[--steps LIST] [--dir D]" >&2
           exit 2 ;;
    esac
done
psi=$build/cli/shardpsi
[[ -x $psi ]] || { echo "$0: build $build first (no $psi)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "$0: needs GNU time (/usr/bin/time)" >&2; exit 2; }
[[ -n $dir ]] || dir=$(mktemp -d)
mkdir -p "$dir/runs"
# The keys of an earlier run in the same --dir are kept, so its files compare.
[[ -s $dir/sk ]] || "$psi" keygen --output "$dir/sk" 2>/dev/null
[[ -s $dir/ck ]] || "$psi" keygen --output "$dir/ck" 2>/dev/null
echo "spill-memory: budget $memory, sizes $sizes, in memory at $inmem; $(nproc) CPUs," \
     "$build, runs in $dir/runs"
printf '| values | step | budget | s | values/s | peak RSS MiB | bytes/value |\n'
printf '| --- | --- | --- | --- | --- | --- | --- |\n'

# measure N STEP BUDGET TAG CMD...: runs CMD under GNU time and prints a row.
measure() {
    local n=$1 step=$2 budget=$3 tag=$4
    shift 4
    /usr/bin/time -f '%e %M' -o "$dir/time" "$@" 2>"$dir/log.$tag" >/dev/null || {
        echo "$0: $step at $n ($budget) failed:" >&2
        tail -n 5 "$dir/log.$tag" >&2
        exit 1
    }
    read -r secs kib <"$dir/time"
    awk -v n="$n" -v st="$step" -v b="$budget" -v s="$secs" -v k="$kib" 'BEGIN {
        printf "| %d | %s | %s | %.1f | %.0f | %.1f | %.1f |\n", n, st, b, s, n / s,
            k / 1024, k * 1024 / n }'
}

# run_steps N BUDGET TAG: the steps of one size.
run_steps() {
    local n=$1 budget=$2 tag=$3 in=$dir/in.$1
    [[ -s $in ]] || awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
        printf "user%010d@example.org\n", i * 7 % (2 * n) }' >"$in"
    local opt=(--memory "$budget" --temp-dir "$dir/runs" --no-progress)
    for step in $steps; do
        case $step in
            setup) measure "$n" setup "$budget" "$tag" "$psi" setup --key-file "$dir/sk" \
                       --input "$in" --structure raw --permutation "$dir/perm.$tag" \
                       --output "$dir/setup.$tag" "${opt[@]}" ;;
            request) measure "$n" request "$budget" "$tag" "$psi" request --key-file "$dir/ck" \
                         --input "$in" --output "$dir/req.$tag" "${opt[@]}" ;;
            response) measure "$n" response "$budget" "$tag" "$psi" response --key-file "$dir/sk" \
                          --request "$dir/req.$tag" --reveal --output "$dir/resp.$tag" \
                          "${opt[@]}" ;;
            response-count)
                "$psi" request --key-file "$dir/ck" --input "$in" --count-only \
                    --output "$dir/creq.$tag" "${opt[@]}"
                measure "$n" response-count "$budget" "$tag" "$psi" response \
                    --key-file "$dir/sk" --request "$dir/creq.$tag" --output "$dir/cresp.$tag" \
                    "${opt[@]}" ;;
            match)
                local sin=$dir/in.server.$mserver
                [[ -s $sin ]] || awk -v n="$mserver" 'BEGIN { for (i = 0; i < n; i++)
                    printf "user%010d@example.org\n", i * 3 }' >"$sin"
                [[ -s $dir/setup.match.$mserver ]] || "$psi" setup --key-file "$dir/sk" \
                    --input "$sin" --structure raw --output "$dir/setup.match.$mserver" \
                    --no-progress 2>/dev/null
                measure "$n" match "$budget" "$tag" "$psi" match --key-file "$dir/ck" \
                    --input "$in" --setup "$dir/setup.match.$mserver" \
                    --response "$dir/resp.$tag" --output "$dir/match.$tag" "${opt[@]}" ;;
        esac
    done
}

for n in $sizes; do
    run_steps "$n" "$memory" "spill.$n"
done
# In memory: a budget far above what the set needs.
run_steps "$inmem" 64G "mem"
for f in setup perm req resp cresp match; do
    [[ -e $dir/$f.mem && -e $dir/$f.spill.$inmem ]] || continue
    cmp -s "$dir/$f.mem" "$dir/$f.spill.$inmem" ||
        { echo "spill-memory: $f differs between --memory $memory and in memory" >&2; exit 1; }
done
echo "spill-memory: the same bytes at $inmem values with --memory $memory and in memory"
