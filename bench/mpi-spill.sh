#!/usr/bin/env bash
# shardpsi-mpi past its memory budget (PROTOCOL.md §18.5, §20): peak resident
# memory of every rank and wall time of `shardpsi-mpi setup` (raw, with its
# permutation) and `shardpsi-mpi request` (and, with --steps, a response and
# match's rows of the same values on both sides) at several set sizes under one
# budget a rank, and of the same steps in memory at one size (a budget far
# above what a rank's part needs), in one run, so that the figures compare:
# whether the ranks' memory stays flat as the set grows, and what spilling
# costs.  Checks that the spilled and in-memory runs wrote the same bytes,
# and match's rows against the input (every value matches).
# Prints a table: values, step, budget, seconds, values per second, the
# largest peak RSS of any rank (MiB) and its bytes a value of the rank's part;
# each step's closing line (mask and merge times, runs) is in SCRATCH/log.*.
#
# Usage: bench/mpi-spill.sh [--build DIR] [--ranks R] [--sizes "1000000 4000000 16000000"]
#                           [--memory 128M] [--inmem N]
#                           [--steps "setup request [response] [match]"]
#                           [--dir SCRATCH]
# match needs setup and request before it in --steps, and runs a reveal
# response (measured too) first.
# Scratch space: about 110 bytes a value of the largest size (match: 230).
set -euo pipefail
build=build-release ranks=2 sizes="1000000 4000000 16000000" memory=128M inmem=4000000 dir=
steps="setup request"
while [[ $# -gt 0 ]]; do
    case $1 in
        --build) build=$2; shift 2 ;;
        --ranks) ranks=$2; shift 2 ;;
        --sizes) sizes=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --inmem) inmem=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        *) echo "usage: $0 [--build DIR] [--ranks R] [--sizes LIST] [--memory B] [--inmem N]" \
                "[--steps LIST] [--dir D]" >&2
           exit 2 ;;
    esac
done
psi=$build/cli/shardpsi
mpi=$build/mpi/shardpsi-mpi
[[ -x $psi && -x $mpi ]] || { echo "$0: build $build first (no $psi or $mpi)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "$0: needs GNU time (/usr/bin/time)" >&2; exit 2; }
[[ -n $dir ]] || dir=$(mktemp -d)
mkdir -p "$dir/runs"
if [[ $(id -u) = 0 ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_pml=${OMPI_MCA_pml-ob1} OMPI_MCA_btl=${OMPI_MCA_btl-self,vader}
[[ -s $dir/sk ]] || "$psi" keygen --output "$dir/sk" 2>/dev/null
[[ -s $dir/ck ]] || "$psi" keygen --output "$dir/ck" 2>/dev/null
echo "mpi-spill: $ranks ranks (--bind-to none), budget $memory a rank, sizes $sizes," \
     "in memory at $inmem; $(nproc) CPUs, $build, runs in $dir/runs"
printf '| values | step | budget a rank | s | values/s | max rank RSS MiB | bytes/value of a part |\n'
printf '| --- | --- | --- | --- | --- | --- | --- |\n'

# measure N STEP BUDGET TAG ARGS...: runs shardpsi-mpi ARGS on the ranks,
# each under GNU time, and prints a row.
measure() {
    local n=$1 step=$2 budget=$3 tag=$4 t0 t1 kib
    shift 4
    rm -f "$dir"/rss.*
    t0=$(date +%s.%N)
    mpirun --oversubscribe --bind-to none -np "$ranks" sh -c \
        'exec /usr/bin/time -f %M -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' "$dir/rss" \
        "$mpi" "$@" --memory "$budget" --temp-dir "$dir/runs" 2>"$dir/log.$tag.$step" >/dev/null || {
        echo "$0: $step at $n ($budget) failed:" >&2
        tail -n 5 "$dir/log.$tag.$step" >&2
        exit 1
    }
    t1=$(date +%s.%N)
    kib=$(cat "$dir"/rss.* | sort -n | tail -n 1)
    awk -v n="$n" -v st="$step" -v b="$budget" -v a="$t0" -v z="$t1" -v k="$kib" \
        -v r="$ranks" 'BEGIN { s = z - a
        printf "| %d | %s | %s | %.1f | %.0f | %.1f | %.1f |\n", n, st, b, s, n / s,
            k / 1024, k * 1024 / (n / r) }'
}

run_steps() {
    local n=$1 budget=$2 tag=$3 in=$dir/in.$1
    [[ -s $in ]] || awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
        printf "user%010d@example.org\n", i * 7 % (2 * n) }' >"$in"
    for step in $steps; do
        case $step in
            setup) measure "$n" setup "$budget" "$tag" setup --key-file "$dir/sk" \
                       --input "$in" --structure raw --permutation "$dir/perm.$tag" \
                       --output "$dir/setup.$tag" ;;
            request) measure "$n" request "$budget" "$tag" request --key-file "$dir/ck" \
                         --input "$in" --output "$dir/req.$tag" ;;
            response) "$psi" request --key-file "$dir/ck" --input "$in" --count-only \
                          --output "$dir/creq.$tag" --no-progress 2>/dev/null
                      measure "$n" response-count "$budget" "$tag" response \
                          --key-file "$dir/sk" --request "$dir/creq.$tag" \
                          --output "$dir/resp.$tag" ;;
            match) measure "$n" response "$budget" "$tag" response --key-file "$dir/sk" \
                       --request "$dir/req.$tag" --reveal --output "$dir/rresp.$tag"
                   measure "$n" match "$budget" "$tag" match --key-file "$dir/ck" \
                       --input "$in" --setup "$dir/setup.$tag" --response "$dir/rresp.$tag" \
                       --output "$dir/rows.$tag"
                   # The same values on both sides: the rows are the input.
                   cmp -s "$dir/rows.$tag" "$in" ||
                       { echo "mpi-spill: match's rows at $n are not the input" >&2; exit 1; }
                   rm -f "$dir/rresp.$tag" "$dir/rows.$tag" ;;
        esac
    done
}

for n in $sizes; do
    run_steps "$n" "$memory" "spill.$n"
done
run_steps "$inmem" 64G mem
for f in setup perm req resp; do
    [[ -e $dir/$f.mem && -e $dir/$f.spill.$inmem ]] || continue
    cmp -s "$dir/$f.mem" "$dir/$f.spill.$inmem" ||
        { echo "mpi-spill: $f differs between --memory $memory and in memory" >&2; exit 1; }
done
echo "mpi-spill: the same bytes at $inmem values with --memory $memory and in memory"
[[ -n $(ls -A "$dir/runs") ]] && { echo "mpi-spill: runs left in $dir/runs" >&2; exit 1; }
exit 0
