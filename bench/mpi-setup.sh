#!/usr/bin/env bash
# The MPI runner's benchmark (PROTOCOL.md §18): one raw setup of N values
# (default 10 million) with its permutation, by `shardpsi-mpi setup` on each rank
# count of --ranks (default "1 2 4"), and the single-thread baseline of the
# same run: `shardpsi setup --threads 1` on the first --baseline values. Prints
# per run the wall time, values per second, the time until every rank has
# masked and sorted its slice (the plan's step) and the time rank 0 then
# takes to merge and write, and
# the largest resident set of any rank (ranks run with --bind-to none and
# the default threads: the CPUs shared among the ranks); checks that every
# rank count wrote the same setup and permutation bytes.  load_1min is the
# 1-minute load average as each run starts (the previous run's tail shows in
# it; a figure well above it means other work shared the machine).
#
# Usage: bench/mpi-setup.sh [--build DIR] [--values N] [--ranks "1 2 4"]
#                           [--baseline N] [--dir SCRATCH]
# Needs ~30 bytes of scratch space a value, times three.
set -euo pipefail
build=build values=10000000 ranks="1 2 4" baseline=1000000 dir=
while [[ $# -gt 0 ]]; do
    case $1 in
        --build) build=$2; shift 2 ;;
        --values) values=$2; shift 2 ;;
        --ranks) ranks=$2; shift 2 ;;
        --baseline) baseline=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        *) echo "usage: $0 [--build DIR] [--values N] [--ranks LIST] [--baseline N] [--dir D]" >&2
           exit 2 ;;
    esac
done
psi=$build/cli/shardpsi
mpi=$build/mpi/shardpsi-mpi
[[ -x $psi && -x $mpi ]] || { echo "$0: build $build first (no $psi or $mpi)" >&2; exit 2; }
[[ -n $dir ]] || dir=$(mktemp -d)
mkdir -p "$dir"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cpus=$(nproc)

in=$dir/values.txt
if [[ ! -s $in ]] || [[ $(wc -l <"$in") -ne $values ]]; then
    awk -v n="$values" 'BEGIN { for (i = 0; i < n; i++) printf "user%010d@example.org\n", i }' >"$in"
fi
rm -f "$dir/key"
"$psi" keygen --output "$dir/key" 2>/dev/null
echo "mpi-setup: $values values ($(stat -c %s "$in") bytes), raw setup with permutation, $cpus CPUs"
echo "mpi-setup: $(mpirun --version | head -n 1), shardpsi-mpi from $build"

head -n "$baseline" "$in" >"$dir/baseline.txt"
t0=$(date +%s.%N)
"$psi" setup --key-file "$dir/key" --input "$dir/baseline.txt" --structure raw --threads 1 \
    --output "$dir/baseline.setup" 2>/dev/null
t1=$(date +%s.%N)
awk -v n="$baseline" -v a="$t0" -v b="$t1" 'BEGIN {
    printf "baseline: shardpsi setup --threads 1, %d values: %.1f s, %.0f values/s\n", n, b - a, n / (b - a) }'

printf '%-6s %-8s %9s %12s %12s %18s %14s %s\n' ranks threads wall_s values/s mask_sort_s merge_write_s max_rank_MiB \
    load_1min
first=
for r in $ranks; do
    threads=$(( cpus / r > 0 ? cpus / r : 1 ))
    log=$dir/run-$r.log
    load=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(date +%s.%N)
    mpirun --oversubscribe --bind-to none -np "$r" /usr/bin/time -f "rank-maxrss-kib %M" "$mpi" setup \
        --key-file "$dir/key" --input "$in" --structure raw --output "$dir/setup-$r" \
        --permutation "$dir/perm-$r" >"$log" 2>&1
    t1=$(date +%s.%N)
    rss=$(awk '/^rank-maxrss-kib/ { if ($2 > m) m = $2 } END { printf "%.0f", m / 1024 }' "$log")
    mask=$(sed -nE 's/.*read and mask ([0-9.]+) s.*/\1/p' "$log")
    merge=$(sed -nE 's/.*merge and write ([0-9.]+) s.*/\1/p' "$log")
    awk -v r="$r" -v th="$threads" -v a="$t0" -v b="$t1" -v n="$values" -v m="$mask" \
        -v w="$merge" -v rss="$rss" -v load="$load" 'BEGIN {
        printf "%-6d %-8d %9.1f %12.0f %12s %18s %14s %s\n", r, th, b - a, n / (b - a), m, w, rss, load }'
    if [[ -z $first ]]; then
        first=$r
    elif ! cmp -s "$dir/setup-$first" "$dir/setup-$r" || ! cmp -s "$dir/perm-$first" "$dir/perm-$r"; then
        echo "mpi-setup: FAIL: $r ranks wrote other bytes than $first ranks" >&2
        exit 1
    else
        rm -f "$dir/setup-$r" "$dir/perm-$r"
    fi
done
echo "mpi-setup: every rank count wrote the same setup ($(stat -c %s "$dir/setup-$first") bytes) and permutation"
