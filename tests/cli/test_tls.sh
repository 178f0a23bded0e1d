#!/usr/bin/env bash
# `shardpsi server` and `shardpsi client` over mutually authenticated TLS 1.3
# on 127.0.0.1 (PROTOCOL.md §15.6), with certificates this test makes
# (tests/helpers/test_certs.c: a CA, its server and client, another CA's,
# expired ones, one for another name) and keys from `shardpsi tls-keygen`:
# rounds in both forms; every peer that cannot prove its identity refused
# on both sides with a message, before the server does any work for it; a
# proxy that changes one byte mid-stream ending both sides with an
# integrity error and no output; the file checks; plain TCP only when asked
# for and only on loopback unless the network is said to be trusted.
#
# Usage: tests/cli/test_tls.sh PSI_BINARY TEST_CERTS_BINARY
# Prints one line per failed check and exits 1 if any check failed.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 PSI_BINARY TEST_CERTS_BINARY" >&2
    exit 2
fi
psi=$1
mkcerts=$2
start_tls=1   # start_server: the transport is in each call's arguments
. "$(dirname "$0")/net_common.sh"

c=$tmp/certs
mkdir "$c" && "$mkcerts" "$c" || { echo "FAIL: making the certificates"; exit 1; }
awk 'BEGIN { for (i = 0; i < 1000; i++) print "v-" i }' >"$tmp/server.txt"
awk 'BEGIN { for (i = 500; i < 1600; i += 3) print "v-" i }' >"$tmp/client.txt"
awk 'NR == FNR { s[$0] = 1; next } ($0 in s) { print FNR - 1 }' \
    "$tmp/server.txt" "$tmp/client.txt" >"$tmp/want.idx"

sfp_early=sha256:$(printf '%064d' 0)
S_CA=(--tls-cert "$c/server.pem" --tls-key "$c/server.key" --tls-ca "$c/ca.pem")
C_CA=(--tls-cert "$c/client.pem" --tls-key "$c/client.key" --tls-ca "$c/ca.pem")

# client NAME ADDR ARGS...: a client writing $tmp/NAME.out; sets $crc.
client() {
    local name=$1 addr=$2
    shift 2
    "$psi" client --connect "$addr" --timeout 20 --input "$tmp/client.txt" --indices \
        --output "$tmp/$name.out" "$@" 2>"$tmp/$name.err" >/dev/null
    crc=$?
}

# --- rounds in both forms -----------------------------------------------------
start_server "$tmp/ca.server.err" --input "$tmp/server.txt" --reveal "${S_CA[@]}"
client ca "127.0.0.1:$port" "${C_CA[@]}"
expect_rc "CA: client" 0 "$crc" "$tmp/ca.err" "$tmp/ca.server.err" &&
    expect_same "CA round" "$tmp/ca.out" "$tmp/want.idx"
wait_pid "$spid"
expect_rc "CA: server" 0 "$rc" "$tmp/ca.server.err"
expect_grep "CA: the server logs the client's identity" \
    "answered 127\.0\.0\.1:[0-9]+ \(CN=client-1, key sha256:[0-9a-f]{16}\): 367 client values" \
    "$tmp/ca.server.err"
expect_grep "CA: the client names the server" "over TLS 1\.3: CN=server, key sha256:" "$tmp/ca.err"
expect_grep "CA: the listening line names the transport" "TLS 1\.3, peers certified by" \
    "$tmp/ca.server.err"

expect_grep "CA: without --tls-peer-name the server warns" \
    "warning: any client holding a certificate of .*ca.pem is served: --tls-peer-name" \
    "$tmp/ca.server.err"

# The server checks the client's name: --tls-peer-name serves client-1, or
# refuses it when only other names are allowed.
start_server "$tmp/pn.server.err" --input "$tmp/server.txt" --reveal "${S_CA[@]}" \
    --tls-peer-name other.example,client-1
client pn "127.0.0.1:$port" "${C_CA[@]}"
expect_rc "--tls-peer-name: client" 0 "$crc" "$tmp/pn.err" "$tmp/pn.server.err" &&
    expect_same "--tls-peer-name round" "$tmp/pn.out" "$tmp/want.idx"
wait_pid "$spid"
expect_grep "--tls-peer-name: the listening line" "certified by .*ca.pem and named other.example,client-1" \
    "$tmp/pn.server.err"
start_server "$tmp/pnx.server.err" --input "$tmp/server.txt" --reveal "${S_CA[@]}" \
    --tls-peer-name client-2,other.example
client pn-wrong "127.0.0.1:$port" "${C_CA[@]}"
expect_rc "--tls-peer-name: another name is refused" 1 "$crc" "$tmp/pn-wrong.err"
expect_no_output "--tls-peer-name: another name" "$tmp/pn-wrong.out"
for _ in $(seq 1 50); do grep -q "ended before" "$tmp/pnx.server.err" && break; sleep 0.1; done
expect_grep "--tls-peer-name: the server says why" "the client's certificate was refused: .*it does not name client-2,other\.example; see --tls-peer-name" \
    "$tmp/pnx.server.err"
kill -9 "$spid"; wait "$spid" 2>/dev/null
"$psi" server --listen 127.0.0.1:0 --input "$tmp/server.txt" --tls-cert "$c/server.pem" \
    --tls-key "$c/server.key" --tls-peer-key "$sfp_early" --tls-peer-name client-1 \
    2>"$tmp/pnk.err" </dev/null
expect_rc "--tls-peer-name with a pinned key: usage" 2 $? "$tmp/pnk.err" &&
    expect_grep "--tls-peer-name with a pinned key: why" "tls-peer-name is for --tls-ca" "$tmp/pnk.err"

# By name: the server's certificate names localhost.
start_server "$tmp/name.server.err" --input "$tmp/server.txt" --reveal "${S_CA[@]}"
client name "localhost:$port" "${C_CA[@]}"
expect_rc "by name: client" 0 "$crc" "$tmp/name.err" "$tmp/name.server.err" &&
    expect_same "by name" "$tmp/name.out" "$tmp/want.idx"
wait_pid "$spid"

# Pinned keys from tls-keygen, no CA.
k=$tmp/keys
mkdir "$k"
"$psi" tls-keygen --cert "$k/s.pem" --key "$k/s.key" --name server-a >"$k/s.fp" 2>"$k/s.err"
expect_rc "tls-keygen: server" 0 $? "$k/s.err"
"$psi" tls-keygen --cert "$k/c.pem" --key "$k/c.key" --name client-b >"$k/c.fp" 2>"$k/c.err"
expect_rc "tls-keygen: client" 0 $? "$k/c.err"
expect_grep "tls-keygen prints the fingerprint" "^sha256:[0-9a-f]{64}$" "$k/s.fp"
checks=$((checks + 1))
[ "$(stat -c %a "$k/s.key")" = 600 ] || fail "tls-keygen: key mode $(stat -c %a "$k/s.key")"
"$psi" tls-keygen --fingerprint "$k/s.pem" >"$k/s.fp2" 2>&1
expect_rc "tls-keygen --fingerprint" 0 $? "$k/s.fp2" && expect_same "fingerprint again" \
    "$k/s.fp2" "$k/s.fp"
"$psi" tls-keygen --cert "$k/s.pem" --key "$k/new.key" >/dev/null 2>"$k/ow.err"
expect_rc "tls-keygen: an existing file is not overwritten" 1 $? "$k/ow.err"
checks=$((checks + 1))
[ -e "$k/new.key" ] && fail "tls-keygen: a failed run left its key"
sfp=$(cat "$k/s.fp")
cfp=$(cat "$k/c.fp")
S_PIN=(--tls-cert "$k/s.pem" --tls-key "$k/s.key" --tls-peer-key "$cfp")
C_PIN=(--tls-cert "$k/c.pem" --tls-key "$k/c.key" --tls-peer-key "$sfp")
start_server "$tmp/pin.server.err" --input "$tmp/server.txt" --reveal "${S_PIN[@]}"
client pin "127.0.0.1:$port" "${C_PIN[@]}"
expect_rc "pinned: client" 0 "$crc" "$tmp/pin.err" "$tmp/pin.server.err" &&
    expect_same "pinned round" "$tmp/pin.out" "$tmp/want.idx"
wait_pid "$spid"
expect_rc "pinned: server" 0 "$rc" "$tmp/pin.server.err"
expect_grep "pinned: the server logs the client's key" \
    "answered 127\.0\.0\.1:[0-9]+ \(CN=client-b, key sha256:${cfp:7:16}\)" "$tmp/pin.server.err"

# --- refusals -------------------------------------------------------------------
# refused NAME PATTERN ADDR CLIENT_ARGS...: the client exits 1 with PATTERN
# and writes nothing.
refused() {
    local name=$1 pattern=$2 addr=$3
    shift 3
    client "$name" "$addr" "$@"
    expect_rc "$name: client" 1 "$crc" "$tmp/$name.err" &&
        expect_grep "$name: message" "$pattern" "$tmp/$name.err"
    expect_no_output "$name" "$tmp/$name.out"
}
# One CA server answers all of them, refusing each before any work, and
# still serves a good client at the end (it is a one-round server: none of
# these ends it).
start_server "$tmp/ref.server.err" --input "$tmp/server.txt" --reveal "${S_CA[@]}" \
    --handshake-timeout 5
refused rogue-client "refused|certificate|alert" "127.0.0.1:$port" \
    --tls-cert "$c/rogue-client.pem" --tls-key "$c/rogue-client.key" --tls-ca "$c/ca.pem"
refused wrong-ca "server's certificate was refused" "127.0.0.1:$port" \
    --tls-cert "$c/client.pem" --tls-key "$c/client.key" --tls-ca "$c/other-ca.pem"
refused expired-client "refused|expired" "127.0.0.1:$port" \
    --tls-cert "$c/expired-client.pem" --tls-key "$c/expired-client.key" --tls-ca "$c/ca.pem"
refused wrong-name "server's certificate was refused" "127.0.0.1:$port" "${C_CA[@]}" \
    --tls-name elsewhere.example
refused plain-client "this server speaks TLS 1.3: give the client --tls-cert" "127.0.0.1:$port" --no-tls
refused client-pins-wrong "not the pinned key|refused" "127.0.0.1:$port" \
    --tls-cert "$c/client.pem" --tls-key "$c/client.key" --tls-peer-key "$sfp"
checks=$((checks + 1))
kill -0 "$spid" 2>/dev/null || fail "refusals: the one-round server exited"
client after-refusals "127.0.0.1:$port" "${C_CA[@]}"
expect_rc "after refusals: client" 0 "$crc" "$tmp/after-refusals.err" "$tmp/ref.server.err" &&
    expect_same "after refusals" "$tmp/after-refusals.out" "$tmp/want.idx"
wait_pid "$spid"
expect_rc "after refusals: server" 0 "$rc" "$tmp/ref.server.err"
f=$tmp/ref.server.err
expect_grep "rogue client: server log" "connection from .*ended before a handshake.*client's certificate was refused" "$f"
expect_grep "expired client: server log" "certificate has expired" "$f"
expect_grep "plain client: server log" "did not speak TLS" "$f"
expect_grep "TLS failures are logged as TLS" "connection from 127.0.0.1:[0-9]* \\(TLS handshake failed\\) ended" "$f"
checks=$((checks + 1))
grep -q "(no TLS)" "$f" && fail "refusals: a TLS server logged a connection as \"(no TLS)\""
checks=$((checks + 1))
n=$(grep -c "ended before a handshake" "$f")
[ "$n" -ge 6 ] || fail "refusals: $n of 6 refused connections logged"
checks=$((checks + 1))
grep -q "masking" "$f" && fail "refusals: the server masked something for a refused peer"

# The server side of the other refusals.
start_server "$tmp/exp.server.err" --input "$tmp/server.txt" --reveal \
    --tls-cert "$c/expired-server.pem" --tls-key "$c/expired-server.key" --tls-ca "$c/ca.pem"
refused expired-server "server's certificate was refused: .*expired" "127.0.0.1:$port" "${C_CA[@]}"
kill -9 "$spid"; wait "$spid" 2>/dev/null
start_server "$tmp/wn.server.err" --input "$tmp/server.txt" --reveal \
    --tls-cert "$c/wrongname-server.pem" --tls-key "$c/wrongname-server.key" --tls-ca "$c/ca.pem"
refused wrongname-server "server's certificate was refused" "127.0.0.1:$port" "${C_CA[@]}"
kill -9 "$spid"; wait "$spid" 2>/dev/null
# The server pins another key than the client's.
start_server "$tmp/sp.server.err" --input "$tmp/server.txt" --reveal \
    --tls-cert "$k/s.pem" --tls-key "$k/s.key" --tls-peer-key "$sfp"
refused server-pins-wrong "refused|alert" "127.0.0.1:$port" "${C_PIN[@]}"
sleep 0.3
expect_grep "server pins another key: server log" "not the pinned key" "$tmp/sp.server.err"
kill -9 "$spid"; wait "$spid" 2>/dev/null
# A TLS client against a plain server.
start_server "$tmp/plain.server.err" --input "$tmp/server.txt" --reveal --no-tls
refused tls-vs-plain "TLS" "127.0.0.1:$port" "${C_CA[@]}"
kill -9 "$spid"; wait "$spid" 2>/dev/null

# --- a byte changed on the path -----------------------------------------------
# tamper DIRECTION: a proxy that flips one byte 20000 bytes into the stream of
# DIRECTION (c2s: inside the client's request; s2c: inside the setup), long
# after the handshake.  Both sides end with an integrity error.
cat >"$tmp/proxy.py" <<'PY'
import socket, sys, threading
listen, target, direction = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", listen)); ls.listen(1)
print(ls.getsockname()[1], flush=True)
a, _ = ls.accept()
b = socket.create_connection(("127.0.0.1", target))
def pump(src, dst, flip):
    seen = 0
    try:
        while True:
            d = src.recv(65536)
            if not d:
                break
            if flip and seen <= 20000 < seen + len(d):
                d = bytearray(d); d[20000 - seen] ^= 0x01; d = bytes(d)
            seen += len(d)
            dst.sendall(d)
    except OSError:
        pass
    for s in (src, dst):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
t = threading.Thread(target=pump, args=(b, a, direction == "s2c")); t.start()
pump(a, b, direction == "c2s"); t.join()
PY
for dir in c2s s2c; do
    start_server "$tmp/t-$dir.server.err" --input "$tmp/server.txt" --reveal "${S_CA[@]}"
    python3 "$tmp/proxy.py" 0 "$port" "$dir" >"$tmp/t-$dir.port" &
    pp=$!
    pids+=("$pp")
    for _ in $(seq 1 100); do [ -s "$tmp/t-$dir.port" ] && break; sleep 0.05; done
    awk 'BEGIN { for (i = 0; i < 3000; i++) print "w-" i }' >"$tmp/big.txt"
    "$psi" client --connect "127.0.0.1:$(cat "$tmp/t-$dir.port")" --timeout 20 \
        --input "$tmp/big.txt" --indices --output "$tmp/t-$dir.out" --tls-name localhost \
        "${C_CA[@]}" 2>"$tmp/t-$dir.err" >/dev/null
    expect_rc "tampered $dir: client" 1 $? "$tmp/t-$dir.err" &&
        expect_grep "tampered $dir: client message" "integrity check" "$tmp/t-$dir.err"
    expect_no_output "tampered $dir" "$tmp/t-$dir.out"
    wait_pid "$spid"
    expect_rc "tampered $dir: server" 1 "$rc" "$tmp/t-$dir.server.err" &&
        expect_grep "tampered $dir: server message" "integrity check" "$tmp/t-$dir.server.err"
    kill -9 "$pp" 2>/dev/null; wait "$pp" 2>/dev/null
done

# --- files and options ----------------------------------------------------------
# usage2 NAME PATTERN ARGS...: `shardpsi server` exits 2 with PATTERN.
usage2() {
    local name=$1 pattern=$2
    shift 2
    timeout 20 "$psi" server --listen 127.0.0.1:0 --input "$tmp/server.txt" "$@" \
        2>"$tmp/$name.err" </dev/null
    expect_rc "$name" 2 $? "$tmp/$name.err" && expect_grep "$name: message" "$pattern" \
        "$tmp/$name.err"
}
cp "$c/server.key" "$tmp/open.key"
chmod 644 "$tmp/open.key"
usage2 key-mode "chmod 600" --tls-cert "$c/server.pem" --tls-key "$tmp/open.key" \
    --tls-ca "$c/ca.pem"
ln -s "$c/server.pem" "$tmp/link.pem"
usage2 cert-symlink "symlink|symbolic link" --tls-cert "$tmp/link.pem" \
    --tls-key "$c/server.key" --tls-ca "$c/ca.pem"
cp "$c/ca.pem" "$tmp/ww-ca.pem"
chmod 666 "$tmp/ww-ca.pem"
usage2 ca-writable "writable" --tls-cert "$c/server.pem" --tls-key "$c/server.key" \
    --tls-ca "$tmp/ww-ca.pem"
usage2 key-mismatch "does not hold the key of the certificate" --tls-cert "$c/server.pem" \
    --tls-key "$c/client.key" --tls-ca "$c/ca.pem"
usage2 no-transport "mutually authenticated TLS"
usage2 both-forms "not both" "${S_CA[@]}" --tls-peer-key "$sfp"
usage2 bad-fingerprint "fingerprint|hex" --tls-cert "$c/server.pem" --tls-key "$c/server.key" \
    --tls-peer-key sha256:1234
"$psi" server --no-tls --listen 0.0.0.0:0 --input "$tmp/server.txt" 2>"$tmp/wide.err" </dev/null
expect_rc "plain TCP beyond loopback" 2 $? "$tmp/wide.err" &&
    expect_grep "plain TCP beyond loopback: message" "loopback.*--trusted-network" "$tmp/wide.err"
"$psi" client --no-tls --connect 192.0.2.1:7 --input "$tmp/client.txt" --output "$tmp/w.out" \
    2>"$tmp/wide2.err" </dev/null
expect_rc "plain TCP client beyond loopback" 2 $? "$tmp/wide2.err"
"$psi" server --no-tls --trusted-network --listen 0.0.0.0:0 --input "$tmp/server.txt" \
    2>"$tmp/trusted.err" >/dev/null </dev/null &
tp=$!
pids+=("$tp")
for _ in $(seq 1 100); do grep -q "listening on" "$tmp/trusted.err" && break; sleep 0.05; done
expect_grep "--trusted-network listens" "listening on 0\.0\.0\.0:[0-9]+ .*plain TCP" "$tmp/trusted.err"
kill -9 "$tp" 2>/dev/null; wait "$tp" 2>/dev/null

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
