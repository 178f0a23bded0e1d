#!/usr/bin/env bash
# `shardpsi server --keep-serving` over TLS against hostile peers on
# 127.0.0.1 (issue 54): connections that never authenticate (silent, or a
# ClientHello a byte a second) are counted apart from the rounds and never
# delay an honest client; one address cannot take the pending pool; an
# authenticated client that only sends keepalives holds its slot no longer
# than --round-timeout, and one identity gets at most --max-per-identity
# rounds at once (and as many waiting), so others are still served.
#
# Usage: tests/cli/test_hostile.sh PSI_BINARY TEST_CERTS_BINARY TEST_NET_PEER
# Prints one line per failed check and exits 1 if any check failed.
set -u

if [ $# -ne 3 ]; then
    echo "usage: $0 PSI_BINARY TEST_CERTS_BINARY TEST_NET_PEER" >&2
    exit 2
fi
psi=$1
mkcerts=$2
peer=$3
py=/usr/bin/python3
[ -x "$py" ] || py=python3
conns=$(dirname "$0")/hostile_conns.py
# Under valgrind every shardpsi process is many times slower: the waits and
# deadlines of part 3 grow by this factor, and no duration is checked.
f=1
[ -n "${PSI_UNDER_VALGRIND:-}" ] && f=8
start_tls=1
. "$(dirname "$0")/net_common.sh"

c=$tmp/certs
mkdir "$c" && "$mkcerts" "$c" || { echo "FAIL: making the certificates"; exit 1; }
awk 'BEGIN { for (i = 0; i < 1000; i++) print "v-" i }' >"$tmp/server.txt"
awk 'BEGIN { for (i = 500; i < 1600; i += 3) print "v-" i }' >"$tmp/client.txt"
awk 'NR == FNR { s[$0] = 1; next } ($0 in s) { print FNR - 1 }' \
    "$tmp/server.txt" "$tmp/client.txt" >"$tmp/want.idx"
S_CA=(--tls-cert "$c/server.pem" --tls-key "$c/server.key" --tls-ca "$c/ca.pem")
C_CA=(--tls-cert "$c/client.pem" --tls-key "$c/client.key" --tls-ca "$c/ca.pem")
C2_CA=(--tls-cert "$c/client2.pem" --tls-key "$c/client2.key" --tls-ca "$c/ca.pem")
sfp=$("$psi" tls-keygen --fingerprint "$c/server.pem")

# honest NAME ARGS...: a client round, timed: sets $crc and $secs.
honest() {
    local name=$1 t0
    shift
    t0=$(date +%s.%N)
    "$psi" client --connect "127.0.0.1:$port" --timeout 20 --input "$tmp/client.txt" \
        --indices --output "$tmp/$name.out" "$@" 2>"$tmp/$name.err" >/dev/null
    crc=$?
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}

# served NAME LIMIT ARGS...: an honest round that succeeds within LIMIT s.
served() {
    local name=$1 limit=$2
    shift 2
    honest "$name" "$@"
    echo "$name: served in $secs s"
    expect_rc "$name: client" 0 "$crc" "$tmp/$name.err" "$srv" &&
        expect_same "$name" "$tmp/$name.out" "$tmp/want.idx"
    checks=$((checks + 1))
    [ -n "${PSI_UNDER_VALGRIND:-}" ] || awk -v s="$secs" -v l="$limit" 'BEGIN { exit !(s <= l) }' ||
        fail "$name: the round took $secs s (at most $limit s)"
}

# --- 1. connections that never authenticate -----------------------------------
# Eight silent connections from the honest client's own address and eight
# that send a ClientHello a byte a second from another, each reopened as
# soon as the 10 s handshake deadline drops it: every honest round is
# served at once (before issue 54 they held every --max-clients slot, and
# the first honest round was not served in 20 s).
srv=$tmp/silent.server.err
start_server "$srv" --input "$tmp/server.txt" --reveal "${S_CA[@]}" --keep-serving
"$py" "$conns" silent 8 24 127.0.0.1 127.0.0.1 "$port" >"$tmp/silent.out" 2>&1 &
h1=$!
"$py" "$conns" slow-hello 8 24 127.0.0.2 127.0.0.1 "$port" >"$tmp/slow.out" 2>&1 &
h2=$!
pids+=("$h1" "$h2")
sleep 1
for i in 1 2 3 4 5 6; do
    served "silent-$i" 15 "${C_CA[@]}"
    sleep 2
done
wait "$h1" "$h2"
expect_grep "silent connections were held and reopened" "silent: 8 held, [1-9][0-9]* reopened" \
    "$tmp/silent.out"
expect_grep "slow ClientHellos were held and reopened" "slow-hello: 8 held, [1-9][0-9]* reopened" \
    "$tmp/slow.out"
expect_grep "slow ClientHellos: logged as TLS" \
    "connection from 127\.0\.0\.2:[0-9]+ \(TLS handshake failed\) ended before a handshake" "$srv"
kill -9 "$spid" 2>/dev/null; wait "$spid" 2>/dev/null

# --- 2. one address cannot take the pending pool --------------------------------
srv=$tmp/peraddr.server.err
start_server "$srv" --input "$tmp/server.txt" --reveal "${S_CA[@]}" --keep-serving \
    --max-pending-per-address 3
"$py" "$conns" silent 3 6 127.0.0.3 127.0.0.1 "$port" >/dev/null 2>&1 &
h1=$!
pids+=("$h1")
sleep 1
# A fourth from that address is closed at once; another address is served.
"$py" - "$port" >"$tmp/fourth.out" 2>&1 <<'PY'
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.3", 0))
s.connect(("127.0.0.1", int(sys.argv[1])))
s.settimeout(5)
t = time.monotonic()
try:
    data = s.recv(1)
except OSError:
    data = None
print("closed after %.1f s" % (time.monotonic() - t) if data == b"" else "held")
PY
expect_grep "per address: a fourth connection is closed at once" "closed after [01]\.[0-9] s" \
    "$tmp/fourth.out"
served "peraddr" 5 "${C_CA[@]}"
expect_grep "per address: logged" "closed the connection from 127\.0\.0\.3:[0-9]+ at once: 3 connections from 127\.0\.0\.3 are already in their handshake \(--max-pending-per-address\)" "$srv"
wait "$h1"
kill -9 "$spid" 2>/dev/null; wait "$spid" 2>/dev/null

# --- 3. authenticated peers that only send keepalives ---------------------------
# Four clients of one identity (client-1) that send an acceptable HELLO and
# then keepalives only: two get rounds (--max-per-identity defaults to half
# of --max-clients 4) and two wait; a fifth of that identity is refused;
# another identity (client-2) is served at once; every holder is ended by
# --round-timeout 6, keepalives or not (--timeout is 20).
srv=$tmp/hold.server.err
start_server "$srv" --input "$tmp/server.txt" --reveal "${S_CA[@]}" --keep-serving \
    --round-timeout $((6 * f))
hold=()
for i in 1 2 3 4; do
    PEER_TLS="$c/client.pem:$c/client.key:$sfp" "$peer" client-hold-after-hello \
        "127.0.0.1:$port" 2>"$tmp/hold$i.err" &
    hold+=($!)
done
pids+=("${hold[@]}")
sleep $((2 * f))
served "other-identity" 4 "${C2_CA[@]}"
honest "fifth" "${C_CA[@]}"
expect_rc "fifth of one identity: refused" 1 "$crc" "$tmp/fifth.err" "$srv" &&
    expect_grep "fifth of one identity: why" "max-per-identity 2" "$tmp/fifth.err"
for i in 1 2 3 4; do
    wait "${hold[$((i - 1))]}"
    expect_rc "holder $i: ended by the server" 0 $? "$tmp/hold$i.err" "$srv" &&
        [ "$f" = 1 ] && expect_grep "holder $i: within the round's deadline" \
            "ended the connection after [0-7]\.[0-9] s" "$tmp/hold$i.err"
done
expect_grep "holds: the deadline is logged" "time allowed .*ran out|before the round's deadline" "$srv"
served "after-holds" 4 "${C_CA[@]}"
kill -9 "$spid" 2>/dev/null; wait "$spid" 2>/dev/null

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
