#!/usr/bin/env bash
# One `shardpsi server` / `shardpsi client` round on 127.0.0.1 with N generated values
# a side (the client's even rows are in the server's set, its odd rows are
# not), checked against that known intersection, with the wall time and
# each side's peak memory.
#
#   bash bench/net-round.sh [N] [PSI] [-- extra options for both sides]
#
# N defaults to 1000000; PSI to build/cli/shardpsi.  Environment:
#   MODE=rows|indices|count|association  the client's output (default rows)
#   CSV=1  the client reads a CSV file (id, email, name) and matches on its
#          email column; rows then come out as whole CSV rows
#   SERVER_OPTS, CLIENT_OPTS  more options for one side only (words split
#          on spaces: "--memory 256M --temp-dir /scratch")
#   TLS=pin|ca|off  the transport: mutually authenticated TLS 1.3 with keys
#          from `shardpsi tls-keygen` pinned on both sides (default), with
#          certificates from a CA made here by openssl(1), or plain TCP
#          (--no-tls)
# The files go to a temporary directory, removed at the end.  Both
# processes share this machine's cores, as they would not on two machines.
set -euo pipefail
n=${1:-1000000}
psi=${2:-build/cli/shardpsi}
shift $(($# < 2 ? $# : 2))
[ "${1:-}" = "--" ] && shift
extra=("$@")
read -r -a sopts <<<"${SERVER_OPTS:-}"
read -r -a copts <<<"${CLIENT_OPTS:-}"
mode=${MODE:-rows}
csv=${CSV:-0}
tls=${TLS:-pin}
tmp=$(mktemp -d)
spid=
trap '[ -n "$spid" ] && kill $spid 2>/dev/null; rm -rf "$tmp"' EXIT

case $mode in
rows) cflag=() ;;
indices) cflag=(--indices) ;;
count) cflag=(--count-only) ;;
association) cflag=(--association) ;;
*) echo "net-round: MODE must be rows, indices, count or association" >&2; exit 2 ;;
esac
sflag=(--reveal)
[ "$mode" = count ] && sflag=()
[ "$mode" = association ] && sflag+=(--association)

case $tls in
off) stls=(--no-tls) ctls=(--no-tls) ;;
pin)
    "$psi" tls-keygen --cert "$tmp/s.pem" --key "$tmp/s.key" --name server >"$tmp/s.fp" 2>/dev/null
    "$psi" tls-keygen --cert "$tmp/c.pem" --key "$tmp/c.key" --name client >"$tmp/c.fp" 2>/dev/null
    stls=(--tls-cert "$tmp/s.pem" --tls-key "$tmp/s.key" --tls-peer-key "$(cat "$tmp/c.fp")")
    ctls=(--tls-cert "$tmp/c.pem" --tls-key "$tmp/c.key" --tls-peer-key "$(cat "$tmp/s.fp")") ;;
ca)
    o() { openssl "$@" 2>/dev/null; }
    o req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/ca.key" \
        -out "$tmp/ca.pem" -subj /CN=bench-ca -days 2
    for who in server client; do
        o req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/$who.key" \
            -out "$tmp/$who.csr" -subj "/CN=$who"
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$tmp/ext"
        o x509 -req -in "$tmp/$who.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
            -CAcreateserial -out "$tmp/$who.pem" -days 2 -extfile "$tmp/ext"
    done
    chmod 600 "$tmp"/*.key
    stls=(--tls-cert "$tmp/server.pem" --tls-key "$tmp/server.key" --tls-ca "$tmp/ca.pem")
    ctls=(--tls-cert "$tmp/client.pem" --tls-key "$tmp/client.key" --tls-ca "$tmp/ca.pem") ;;
*) echo "net-round: TLS must be pin, ca or off" >&2; exit 2 ;;
esac

awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "user%d@example.org\n", i }' \
    >"$tmp/server.txt"
if [ "$csv" = 1 ]; then
    awk -v n="$n" 'BEGIN { print "id,email,name"; for (j = 0; j < n; j++)
        if (j % 2 == 0) printf "%d,user%d@example.org,\"Name, %d\"\r\n", j, j, j;
        else printf "%d,\"guest%d@example.net\",\"Guest \"\"%d\"\"\"\r\n", j, j, j }' \
        >"$tmp/client.in"
    cin=(--input "$tmp/client.in" --column email)
else
    awk -v n="$n" 'BEGIN { for (j = 0; j < n; j++)
        if (j % 2 == 0) printf "user%d@example.org\n", j; else printf "guest%d@example.net\n", j }' \
        >"$tmp/client.in"
    cin=(--input "$tmp/client.in")
fi
# The expected output.
case $mode in
rows) if [ "$csv" = 1 ]; then
          awk 'NR == 1 || NR % 2 == 0 { sub(/\r$/, ""); print }' "$tmp/client.in"
      else awk 'NR % 2 == 1' "$tmp/client.in"; fi ;;
indices) awk -v n="$n" 'BEGIN { for (j = 0; j < n; j += 2) print j }' ;;
count) echo $(((n + 1) / 2)) ;;
association) awk -v n="$n" 'BEGIN { for (j = 0; j < n; j += 2) printf "%d\t%d\n", j, j }' ;;
esac >"$tmp/want"
echo "net-round: $n values a side, $(du -h "$tmp/server.txt" | cut -f1) and" \
     "$(du -h "$tmp/client.in" | cut -f1) of input ($([ "$csv" = 1 ] && echo CSV || echo lines))," \
     "output $mode; transport ${tls}; options: ${extra[*]:-none}; server:" \
     "${sopts[*]:-none}; client: ${copts[*]:-none}"

"$psi" server --listen 127.0.0.1:0 --input "$tmp/server.txt" "${sflag[@]}" --progress \
    "${stls[@]}" "${extra[@]}" "${sopts[@]}" 2>"$tmp/server.err" &
spid=$!
port=
for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/server.err")
    [ -n "$port" ] && break
    sleep 0.1
done
[ -n "$port" ] || { cat "$tmp/server.err"; exit 1; }
t0=$(date +%s.%N)
"$psi" client --connect "127.0.0.1:$port" "${cin[@]}" "${cflag[@]}" \
    --output "$tmp/out" --progress "${ctls[@]}" "${extra[@]}" "${copts[@]}" \
    2>"$tmp/client.err" || {
    cat "$tmp/client.err" "$tmp/server.err"; exit 1; }
t1=$(date +%s.%N)
wait "$spid"
spid=
grep -v '%), ' "$tmp/server.err" | sed 's/^/  /'
grep -v '%), ' "$tmp/client.err" | sed 's/^/  /'
if cmp -s "$tmp/want" "$tmp/out"; then
    echo "net-round: result OK ($(wc -l <"$tmp/out") lines), round" \
         "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
else
    echo "net-round: result WRONG"
    exit 1
fi
