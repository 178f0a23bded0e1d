#!/usr/bin/env bash
# What TLS costs a round: bench/net-round.sh with N values a side, K times
# over plain TCP and K times over TLS with pinned keys, alternating (off,
# pin, off, pin, ...) so that drift of a shared machine falls on both,
# then the median round time of each and their ratio.
#
#   bash bench/net-tls.sh [N] [K] [PSI]
#
# N defaults to 1000000, K to 3, PSI to build/cli/shardpsi (benchmark a
# release build: meson setup build-release --buildtype=release).
set -euo pipefail
n=${1:-1000000}
k=${2:-3}
psi=${3:-build/cli/shardpsi}
here=$(dirname "$0")
declare -A times=([off]="" [pin]="")
for i in $(seq 1 "$k"); do
    for t in off pin; do
        s=$(TLS=$t MODE=indices bash "$here/net-round.sh" "$n" "$psi" |
            sed -n 's/^net-round: result OK .* round \([0-9.]*\) s$/\1/p')
        [ -n "$s" ] || { echo "net-tls: the $t round failed" >&2; exit 1; }
        echo "net-tls: run $i, ${t}: round $s s"
        times[$t]+="$s "
    done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END {
    print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
off=$(echo "${times[off]}" | median)
pin=$(echo "${times[pin]}" | median)
echo "net-tls: $n values a side, $k rounds each: median round $off s plain TCP," \
     "$pin s TLS 1.3 (pinned keys): TLS costs" \
     "$(awk -v a="$off" -v b="$pin" 'BEGIN { printf "%+.1f%%", 100 * (b - a) / a }')"
