#!/usr/bin/env bash
# One `psi server` / `psi client` round on 127.0.0.1 with N generated values
# a side (half of the client's in the server's set), checked against the
# known intersection, with the wall time and each side's peak memory.
#
#   bash bench/net-round.sh [N] [PSI] [-- extra options for both sides]
#
# N defaults to 1000000; PSI to build/cli/psi.  The files go to a
# temporary directory, removed at the end.  Both processes share this
# machine's cores, as they would not on two machines.
set -euo pipefail
n=${1:-1000000}
psi=${2:-build/cli/psi}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = "--" ] && shift
extra=("$@")
tmp=$(mktemp -d)
trap 'kill $spid 2>/dev/null; rm -rf "$tmp"' EXIT

# Server: user<i>@example.org for i < n; client row j: the server's value j
# for even j, a value the server lacks for odd j.
awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "user%d@example.org\n", i }' \
    >"$tmp/server.txt"
awk -v n="$n" 'BEGIN { for (j = 0; j < n; j++)
    if (j % 2 == 0) printf "user%d@example.org\n", j; else printf "guest%d@example.net\n", j }' \
    >"$tmp/client.txt"
echo "net-round: $n values a side, $(du -h "$tmp/server.txt" | cut -f1) and" \
     "$(du -h "$tmp/client.txt" | cut -f1) of input; options: ${extra[*]:-none}"

"$psi" server --listen 127.0.0.1:0 --input "$tmp/server.txt" --reveal --progress \
    "${extra[@]}" 2>"$tmp/server.err" &
spid=$!
port=
for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/server.err")
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$tmp/server.err"; exit 1; }
t0=$(date +%s.%N)
"$psi" client --connect "127.0.0.1:$port" --input "$tmp/client.txt" \
    --output "$tmp/out.txt" --progress "${extra[@]}" 2>"$tmp/client.err" || {
    cat "$tmp/client.err" "$tmp/server.err"; exit 1; }
t1=$(date +%s.%N)
wait "$spid"
grep -v '%), ' "$tmp/server.err" | sed 's/^/  /'
grep -v '%), ' "$tmp/client.err" | sed 's/^/  /'
if awk 'NR % 2 == 1' "$tmp/client.txt" | cmp -s - "$tmp/out.txt"; then
    echo "net-round: result OK ($(wc -l <"$tmp/out.txt") rows), round $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
else
    echo "net-round: result WRONG"
    exit 1
fi
