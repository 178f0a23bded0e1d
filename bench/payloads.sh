#!/usr/bin/env bash
# The cost of payloads (PROTOCOL.md §22) through the offline commands: wall
# time and peak RSS of `shardpsi setup` (raw) and `shardpsi payloads` of the
# same N-row CSV, of `shardpsi match` with and without --payloads for a client
# of N/2 rows half of which match, and the table's bytes a row, in one run.
# Checks that the joined rows are the plain match's rows with the columns.
# Then the same join over the network (§22.2, loopback, no TLS): the
# client's wall time and both sides' peak RSS of a plain round, a round with
# --payloads and one with --payloads --share-result.  Then past the budget
# (§22.4, --memory M, 64M by default): `payloads` (the same bytes as in
# memory for one salt), `match --payloads`, and a network round with both
# sides' --memory M.
#   bench/payloads.sh [--build DIR] [--n N] [--dir SCRATCH] [--memory M]
set -euo pipefail
build=build-release n=1000000 dir= memory=64M
while [[ $# -gt 0 ]]; do
    case $1 in
        --build) build=$2; shift 2 ;;
        --n) n=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        *) echo "usage: $0 [--build DIR] [--n N] [--dir D] [--memory M]" >&2; exit 2 ;;
    esac
done
psi=$build/cli/shardpsi
[[ -x $psi ]] || { echo "$0: build $build first (no $psi)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "$0: needs GNU time (/usr/bin/time)" >&2; exit 2; }
[[ -n $dir ]] || dir=$(mktemp -d)
awk -v n="$n" 'BEGIN { print "id,email,region,segment"
    for (i = 0; i < n; i++) printf "%d,user%010d@example.org,region-%d,segment-%d\n", i, i, i % 17, i % 5 }' \
    >"$dir/server.csv"
awk -v n="$n" 'BEGIN { print "name,email"
    for (i = 0; i < n / 2; i++) printf "n%d,user%010d@example.org\n", i, (i % 2 ? i : n + i) }' \
    >"$dir/client.csv"
rm -f "$dir/sk" "$dir/ck"
"$psi" keygen --output "$dir/sk" 2>/dev/null
"$psi" keygen --output "$dir/ck" 2>/dev/null
echo "payloads: $n server rows, $((n / 2)) client rows; $(nproc) CPUs, $build"
printf '| step | s | peak RSS MiB | output bytes | bytes/row |\n| --- | --- | --- | --- | --- |\n'

# measure NAME OUT ROWS ARGS...: one run of shardpsi ARGS under GNU time.
measure() {
    local name=$1 out=$2 rows=$3 t0 t1
    shift 3
    t0=$(date +%s.%N)
    /usr/bin/time -f %M -o "$dir/rss" "$psi" "$@" --no-progress 2>"$dir/log.$name" ||
        { echo "$0: $name failed:" >&2; tail -n 5 "$dir/log.$name" >&2; exit 1; }
    t1=$(date +%s.%N)
    awk -v s="$name" -v a="$t0" -v z="$t1" -v k="$(head -n 1 "$dir/rss")" \
        -v b="$(stat -c %s "$out")" -v r="$rows" \
        'BEGIN { printf "| %s | %.1f | %.1f | %d | %.1f |\n", s, z - a, k / 1024, b, b / r }'
}
S=(--key-file "$dir/sk") C=(--key-file "$dir/ck")
measure "setup (raw)" "$dir/setup" "$n" setup "${S[@]}" --input "$dir/server.csv" --column email \
    --structure raw --output "$dir/setup"
salt=$(printf '%064x' 22)
measure "payloads (region,segment)" "$dir/pay" "$n" payloads "${S[@]}" --input "$dir/server.csv" \
    --column email --payload-columns region,segment --salt "$salt" --output "$dir/pay"
"$psi" request "${C[@]}" --input "$dir/client.csv" --column email --output "$dir/req" --no-progress 2>/dev/null
"$psi" response "${S[@]}" --request "$dir/req" --reveal --output "$dir/resp" --no-progress 2>/dev/null
M=(match "${C[@]}" --input "$dir/client.csv" --column email --setup "$dir/setup" --response "$dir/resp")
measure "match" "$dir/rows" $((n / 2)) "${M[@]}" --output "$dir/rows"
measure "match --payloads" "$dir/joined" $((n / 2)) "${M[@]}" --payloads "$dir/pay" --output "$dir/joined"
# The joined rows are the matched rows with the server's columns.
cmp -s <(cut -d, -f1,2 "$dir/joined") "$dir/rows" ||
    { echo "payloads: the joined rows are not the matched rows" >&2; exit 1; }
[[ $(wc -l <"$dir/joined") -eq $((n / 4 + 1)) ]] ||
    { echo "payloads: $(wc -l <"$dir/joined") joined lines, expected $((n / 4 + 1))" >&2; exit 1; }
echo "payloads: the joined rows are the matched rows with their columns ($((n / 4)) rows)"

# The network round: net NAME SERVER_ARGS -- CLIENT_ARGS.
net() {
    local name=$1 s=() c=() port t0 t1
    shift
    while [[ $1 != -- ]]; do s+=("$1"); shift; done
    shift
    c=("$@")
    : >"$dir/slog"
    /usr/bin/time -f %M -o "$dir/srss" "$psi" server --no-tls --listen 127.0.0.1:0 \
        --input "$dir/server.csv" --column email --reveal "${s[@]}" 2>"$dir/slog" &
    local spid=$!
    for _ in $(seq 1 600); do
        port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/slog")
        [[ -n $port ]] && break
        sleep 0.1
    done
    [[ -n $port ]] || { echo "$0: the server did not start" >&2; cat "$dir/slog" >&2; exit 1; }
    t0=$(date +%s.%N)
    /usr/bin/time -f %M -o "$dir/crss" "$psi" client --no-tls --connect "127.0.0.1:$port" \
        --input "$dir/client.csv" --column email --output "$dir/net.out" --no-progress \
        "${c[@]}" 2>"$dir/clog" || { echo "$0: client $name failed" >&2; cat "$dir/clog" >&2; exit 1; }
    t1=$(date +%s.%N)
    wait "$spid" || { echo "$0: server $name failed" >&2; cat "$dir/slog" >&2; exit 1; }
    awk -v s="$name" -v a="$t0" -v z="$t1" -v c="$(tail -n 1 "$dir/crss")" \
        -v v="$(tail -n 1 "$dir/srss")" \
        'BEGIN { printf "| %s | %.1f | %.1f | %.1f |\n", s, z - a, c / 1024, v / 1024 }'
}
echo
printf '| network round | client s | client peak MiB | server peak MiB |\n| --- | --- | --- | --- |\n'
net "plain" --
cp "$dir/net.out" "$dir/net.rows"
net "--payloads" --payload-columns region,segment -- --payloads
cmp -s "$dir/net.out" "$dir/joined" ||
    { echo "payloads: the network join differs from match --payloads" >&2; exit 1; }
net "--payloads --share-result" --payload-columns region,segment --share-result \
    --output "$dir/net.server" -- --payloads --share-result
[[ $(wc -l <"$dir/net.server") -eq $((n / 4 + 1)) ]] ||
    { echo "payloads: the server wrote $(wc -l <"$dir/net.server") lines" >&2; exit 1; }
echo "payloads: the network join is match --payloads' output; the server's shared rows: $((n / 4))"

# Past the budget (§22.4).
echo
echo "past the budget: --memory $memory"
printf '| step | s | peak RSS MiB | output bytes | bytes/row |\n| --- | --- | --- | --- | --- |\n'
measure "payloads --memory $memory" "$dir/pay.m" "$n" payloads "${S[@]}" --input "$dir/server.csv" \
    --column email --payload-columns region,segment --salt "$salt" --memory "$memory" \
    --output "$dir/pay.m"
grep -q "built within --memory" "$dir/log.payloads --memory $memory" ||
    { echo "payloads: --memory $memory did not spill" >&2; exit 1; }
cmp -s "$dir/pay.m" "$dir/pay" || { echo "payloads: past --memory, other bytes" >&2; exit 1; }
measure "match --payloads --memory $memory" "$dir/joined.m" $((n / 2)) "${M[@]}" \
    --payloads "$dir/pay" --memory "$memory" --output "$dir/joined.m"
grep -q "matched from runs on disk" "$dir/log.match --payloads --memory $memory" ||
    { echo "payloads: match --memory $memory did not spill" >&2; exit 1; }
cmp -s "$dir/joined.m" "$dir/joined" ||
    { echo "payloads: match --payloads past --memory differs" >&2; exit 1; }
echo "payloads: past --memory $memory the payload file and the joined rows are the same bytes"
printf '| network round | client s | client peak MiB | server peak MiB |\n| --- | --- | --- | --- |\n'
net "--payloads, both --memory $memory" --memory "$memory" --payload-columns region,segment -- \
    --memory "$memory" --payloads
cmp -s "$dir/net.out" "$dir/joined" ||
    { echo "payloads: the network join past --memory differs" >&2; exit 1; }
echo "payloads: the network join past --memory is match --payloads' output"
