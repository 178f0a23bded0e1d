#!/usr/bin/env bash
# Private join over the network (PROTOCOL.md §22.2): `shardpsi server
# --payload-columns` and `shardpsi client --payloads`, checked against a plain
# inner join of the two CSV files computed here (python3's csv module), in
# every suite, with raw and GCS setups, for a line-mode client and over TLS
# 1.3; `--share-result` on both sides, the server's rows checked against the
# client's association table and the plain join; and the faults: one side
# without the other's option, a payload table changed on the path, a value
# twice in the server's input, the options that do not go together.
#
# Usage: tests/cli/test_payloads_net.sh PSI_BINARY
# Prints one line per failed check and exits 1 if any check failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 PSI_BINARY" >&2
    exit 2
fi
psi=$1
command -v python3 >/dev/null || { echo "test_payloads_net: python3 is needed"; exit 77; }
. "$(dirname "$0")/net_common.sh"
d=$tmp

# shellcheck source=payload_common.sh
. "$(dirname "$0")/payload_common.sh"
payload_inputs 700 1900

payload_join "$d/client.csv" "$d/server.csv" email region,segment "$d/want.csv"
payload_join "$d/client.txt" "$d/server.csv" email segment,id,region "$d/want.tsv" lines
payload_join "$d/client.csv" "$d/server.csv" email '' "$d/want.server.csv" server
payload_join "$d/client.csv" "$d/server.csv" email '' "$d/want.rows.csv"
head -n 101 "$d/client.csv" >"$d/client.small.csv"
payload_join "$d/client.small.csv" "$d/server.csv" email region,segment "$d/want.small.csv"
checks=$((checks + 1))
[ "$(wc -l <"$d/want.csv")" -gt 200 ] || fail "the plain join is too small"

SRV=(--input "$d/server.csv" --column email --reveal)
CLI=(--timeout 20 --input "$d/client.csv" --column email)

# round NAME SERVER_ARGS -- CLIENT_ARGS: a server and a client on loopback
# (--no-tls unless the arguments give TLS); sets $crc and $rc (the
# server's), the client's output in $d/NAME.out, the logs in NAME.err and
# NAME.server.err.
round() {
    local name=$1 s=() c=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do s+=("$1"); shift; done
    shift
    c=("$@")
    start_server "$d/$name.server.err" "${s[@]}" || { crc=-1; rc=-1; return; }
    local plain=(--no-tls)
    [ -n "${start_tls:-}" ] && plain=()
    "$psi" client "${plain[@]}" --connect "127.0.0.1:$port" --output "$d/$name.out" \
        "${c[@]}" 2>"$d/$name.err" >/dev/null
    crc=$?
    wait_pid "$spid"
}

# --- the join in every suite, raw and GCS ---------------------------------------
for suite in openmined-p256 p256-sswu ristretto255; do
    for st in raw gcs; do
        n=$suite.$st
        round "$n" "${SRV[@]}" --suite "$suite" --structure "$st" \
            --payload-columns region,segment -- "${CLI[@]}" --suite "$suite" --payloads
        expect_rc "$n: client" 0 "$crc" "$d/$n.err" "$d/$n.server.err" &&
            same_csv "$n: the client's rows vs the plain join" "$d/$n.out" "$d/want.csv"
        expect_rc "$n: server" 0 "$rc" "$d/$n.server.err" &&
            expect_fixed "$n: the server's line" "payload table sent" "$d/$n.server.err"
    done
done

# A line-mode client, other columns, a padded length.
round lines "${SRV[@]}" --suite ristretto255 --payload-columns segment,id,region \
    --pad-to 64 -- --timeout 20 --input "$d/client.txt" --suite ristretto255 --payloads
expect_rc "lines: client" 0 "$crc" "$d/lines.err" "$d/lines.server.err" &&
    expect_same "lines: the client's rows vs the plain join" "$d/lines.out" "$d/want.tsv"

# Past the budget (PROTOCOL.md §22.4): a server whose input is past --memory
# builds each round's table a chunk at a time, ordered through runs on disk;
# a client whose table is past a quarter of its --memory keeps it in a file
# and looks its rows up through a sparse index.
for st in raw gcs; do
    round "budget.$st" "${SRV[@]}" --suite p256-sswu --structure "$st" --memory 128K \
        --payload-columns region,segment -- --timeout 20 --input "$d/client.small.csv" \
        --column email --suite p256-sswu --memory 128K --payloads
    expect_rc "budget.$st: client" 0 "$crc" "$d/budget.$st.err" "$d/budget.$st.server.err" &&
        same_csv "budget.$st: the client's rows vs the plain join" "$d/budget.$st.out" \
            "$d/want.small.csv"
    expect_fixed "budget.$st: the client kept the table in a file" "is kept in a file" \
        "$d/budget.$st.err"
    expect_rc "budget.$st: server" 0 "$rc" "$d/budget.$st.server.err" &&
        expect_fixed "budget.$st: the server's line" "payload table sent" \
            "$d/budget.$st.server.err"
done
# A client whose own input is past its --memory: the round's steps, the table
# received into a payload file, the rows and payloads written a chunk at a
# time; with the server's input past its budget too.
round budget.client "${SRV[@]}" --suite ristretto255 --memory 128K \
    --payload-columns region,segment -- "${CLI[@]}" --suite ristretto255 --memory 128K \
    --payloads
expect_rc "budget.client: client" 0 "$crc" "$d/budget.client.err" \
    "$d/budget.client.server.err" &&
    same_csv "budget.client: the client's rows vs the plain join" "$d/budget.client.out" \
        "$d/want.csv"
expect_fixed "budget.client: the client's steps matched from runs" "matched from runs on disk" \
    "$d/budget.client.err"
expect_rc "budget.client: server" 0 "$rc" "$d/budget.client.server.err" &&
    expect_fixed "budget.client: the server built its table past the budget" \
        "built within --memory 131072" "$d/budget.client.server.err"

# A value twice in an input past the budget: found by the merge of the runs,
# named in the server's log, and the client told only that the table cannot
# be built.
cp "$d/server.csv" "$d/server.dup.csv"
sed -n 5p "$d/server.csv" >>"$d/server.dup.csv"
round budget.dup --input "$d/server.dup.csv" --column email --reveal --memory 128K \
    --payload-columns region -- --timeout 20 --input "$d/client.small.csv" --column email \
    --payloads
expect_rc "budget.dup: client" 1 "$crc" "$d/budget.dup.err" &&
    expect_fixed "budget.dup: client message" "cannot build its payload table" \
        "$d/budget.dup.err"
expect_no_output "budget.dup" "$d/budget.dup.out"
expect_rc "budget.dup: server" 1 "$rc" "$d/budget.dup.server.err" &&
    expect_fixed "budget.dup: the server names the rows" \
        "row 701 is there twice (first at row 4)" "$d/budget.dup.server.err"

# A client without --payloads from a server with payload columns: the
# plain rows, and no table sent.
round plain "${SRV[@]}" --payload-columns region -- "${CLI[@]}"
expect_rc "no --payloads: client" 0 "$crc" "$d/plain.err" &&
    expect_same "no --payloads: the plain rows" "$d/plain.out" "$d/want.rows.csv"
checks=$((checks + 1))
grep -q "payload table sent" "$d/plain.server.err" && fail "no --payloads: a table was sent"

# --- a prebuilt setup with its payload file (server --setup --payloads) ----------
"$psi" keygen --output "$d/sk" 2>"$d/err" && "$psi" keygen --output "$d/other.key" 2>"$d/err" &&
    "$psi" setup --key-file "$d/sk" --input "$d/server.csv" --column email --structure raw \
        --output "$d/setup.bin" 2>"$d/err" &&
    "$psi" payloads --key-file "$d/sk" --input "$d/server.csv" --column email \
        --payload-columns region,segment --output "$d/pay.bin" 2>"$d/err" &&
    "$psi" payloads --key-file "$d/other.key" --input "$d/server.csv" --column email \
        --payload-columns region,segment --output "$d/pay.other" 2>"$d/err"
expect_rc "prebuilt: the offline steps" 0 $? "$d/err"
PRE=(--setup "$d/setup.bin" --key-file "$d/sk" --reveal)
round pre "${PRE[@]}" --payloads "$d/pay.bin" -- "${CLI[@]}" --payloads
expect_rc "prebuilt: client" 0 "$crc" "$d/pre.err" "$d/pre.server.err" &&
    same_csv "prebuilt: the client's rows vs the plain join" "$d/pre.out" "$d/want.csv"
expect_rc "prebuilt: server" 0 "$rc" "$d/pre.server.err" &&
    expect_fixed "prebuilt: the server names the file" "serving the payload file" \
        "$d/pre.server.err"
# A payload file of another key: the client finds no record for a row the
# raw setup matched, and says so to both.
round preother "${PRE[@]}" --payloads "$d/pay.other" -- "${CLI[@]}" --payloads
expect_rc "prebuilt, another key's table: client" 1 "$crc" "$d/preother.err" &&
    expect_fixed "prebuilt, another key's table: message" "has no payload for row" \
        "$d/preother.err"
expect_no_output "prebuilt, another key's table" "$d/preother.out"
expect_rc "prebuilt, another key's table: server" 1 "$rc" "$d/preother.server.err"
# A payload file of another input (another count) is refused at start.
head -n 101 "$d/server.csv" >"$d/server100.csv"
"$psi" payloads --key-file "$d/sk" --input "$d/server100.csv" --column email \
    --payload-columns region --output "$d/pay.100" 2>"$d/err"
timeout 20 "$psi" server --no-tls --listen 127.0.0.1:0 "${PRE[@]}" --payloads "$d/pay.100" \
    >/dev/null 2>"$d/pre100.err"
expect_rc "prebuilt, another input's table" 2 $? "$d/pre100.err" &&
    expect_fixed "prebuilt, another input's table: message" "holds 100 records and setup" \
        "$d/pre100.err"

# --- --share-result -------------------------------------------------------------
round share "${SRV[@]}" --payload-columns region,segment --share-result \
    --output "$d/share.server.csv" -- "${CLI[@]}" --payloads --share-result
expect_rc "share: client" 0 "$crc" "$d/share.err" "$d/share.server.err" &&
    same_csv "share: the client's rows vs the plain join" "$d/share.out" "$d/want.csv"
expect_rc "share: server" 0 "$rc" "$d/share.server.err" &&
    same_csv "share: the server's rows vs the plain join" "$d/share.server.csv" \
        "$d/want.server.csv"
# With the association table: the server's rows are the table's server rows.
round assoc "${SRV[@]}" --association --share-result --output "$d/assoc.server.csv" -- \
    "${CLI[@]}" --association --share-result
expect_rc "share + association: client" 0 "$crc" "$d/assoc.err" "$d/assoc.server.err"
expect_rc "share + association: server" 0 "$rc" "$d/assoc.server.err"
checks=$((checks + 1))
python3 - "$d/server.csv" "$d/assoc.out" "$d/assoc.server.csv" <<'EOF' || fail "share + association: the server's rows are not the association table's"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
idx = sorted({int(l.split('\t')[1]) for l in open(sys.argv[2]).read().splitlines()})
got = list(csv.reader(open(sys.argv[3], newline='')))
sys.exit(0 if got == [rows[0]] + [rows[1 + i] for i in idx] else 1)
EOF

# Both must ask: either side alone fails the round on both, with no output.
round share1 "${SRV[@]}" -- "${CLI[@]}" --share-result
expect_rc "share, client only: client" 1 "$crc" "$d/share1.err" &&
    expect_fixed "share, client only: message" "both sides must give --share-result" \
        "$d/share1.err"
expect_rc "share, client only: server" 1 "$rc" "$d/share1.server.err"
expect_no_output "share, client only" "$d/share1.out"
round share2 "${SRV[@]}" --share-result --output "$d/share2.server.csv" -- "${CLI[@]}"
expect_rc "share, server only: client" 1 "$crc" "$d/share2.err" &&
    expect_fixed "share, server only: message" "only with clients that share the result" \
        "$d/share2.err"
expect_rc "share, server only: server" 1 "$rc" "$d/share2.server.err"
expect_no_output "share, server only: the client's" "$d/share2.out"
expect_no_output "share, server only: the server's" "$d/share2.server.csv"
# The client matches once for its rows and the shared result: its rows are
# those of a round without --share-result, a value it holds twice included
# (matched once, as the raw setup holds it once).
{ cat "$d/client.csv"; sed -n 2p "$d/want.rows.csv"; } >"$d/client.dup.csv"
DUP=(--timeout 20 --input "$d/client.dup.csv" --column email)
round dupplain "${SRV[@]}" -- "${DUP[@]}"
round dupshare "${SRV[@]}" --share-result --output "$d/dupshare.server.csv" -- "${DUP[@]}" \
    --share-result
expect_rc "share, a repeated value: client" 0 "$crc" "$d/dupshare.err" "$d/dupshare.server.err" &&
    same_csv "share, a repeated value: the client's rows vs a round without it" \
        "$d/dupshare.out" "$d/dupplain.out" &&
    same_csv "share, a repeated value: the client's rows vs the plain join" "$d/dupshare.out" \
        "$d/want.rows.csv"
expect_rc "share, a repeated value: server" 0 "$rc" "$d/dupshare.server.err"

# --- over TLS 1.3 (pinned keys) -----------------------------------------------
k=$d/keys
mkdir "$k"
"$psi" tls-keygen --cert "$k/s.pem" --key "$k/s.key" --name server-a >"$k/s.fp" 2>"$k/err" &&
    "$psi" tls-keygen --cert "$k/c.pem" --key "$k/c.key" --name client-b >"$k/c.fp" 2>"$k/err"
expect_rc "tls-keygen" 0 $? "$k/err"
start_tls=1
round tls "${SRV[@]}" --suite p256-sswu --payload-columns region,segment --share-result \
    --output "$d/tls.server.csv" --tls-cert "$k/s.pem" --tls-key "$k/s.key" \
    --tls-peer-key "$(cat "$k/c.fp")" -- "${CLI[@]}" --suite p256-sswu --payloads \
    --share-result --tls-cert "$k/c.pem" --tls-key "$k/c.key" --tls-peer-key "$(cat "$k/s.fp")"
start_tls=
expect_rc "tls: client" 0 "$crc" "$d/tls.err" "$d/tls.server.err" &&
    expect_fixed "tls: over TLS" "over TLS 1.3" "$d/tls.err" &&
    same_csv "tls: the client's rows vs the plain join" "$d/tls.out" "$d/want.csv"
expect_rc "tls: server" 0 "$rc" "$d/tls.server.err" &&
    same_csv "tls: the server's rows vs the plain join" "$d/tls.server.csv" "$d/want.server.csv"

# --- a payload table changed on the path ----------------------------------------
# A proxy that reads the frames from the server and flips one bit of the
# first record's ciphertext in the payload table; the client holds every
# server value, so that record is matched and must fail to open.
cat >"$d/proxy.py" <<'PY'
import socket, sys, threading
target = int(sys.argv[1])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0)); ls.listen(1)
print(ls.getsockname()[1], flush=True)
a, _ = ls.accept()
b = socket.create_connection(("127.0.0.1", target))
def plain(src, dst):
    try:
        while True:
            d = src.recv(65536)
            if not d:
                break
            dst.sendall(d)
    except OSError:
        pass
    for s in (src, dst):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
def frames(src, dst):
    buf = bytearray()
    try:
        while True:
            d = src.recv(65536)
            if not d:
                break
            buf += d
            while len(buf) >= 9:
                n = int.from_bytes(buf[1:9], 'big')
                if len(buf) < 9 + n:
                    break
                f = buf[:9 + n]
                if f[0] == 11 and n > 56 + 40:
                    f[9 + 56 + 16 + 2] ^= 0x01
                dst.sendall(bytes(f))
                del buf[:9 + n]
    except OSError:
        pass
    for s in (src, dst):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
t = threading.Thread(target=frames, args=(b, a)); t.start()
plain(a, b); t.join()
PY
start_server "$d/tamper.server.err" "${SRV[@]}" --payload-columns region
python3 "$d/proxy.py" "$port" >"$d/tamper.port" &
pp=$!
pids+=("$pp")
for _ in $(seq 1 100); do [ -s "$d/tamper.port" ] && break; sleep 0.05; done
"$psi" client --no-tls --connect "127.0.0.1:$(cat "$d/tamper.port")" --timeout 20 \
    --input "$d/server.csv" --column email --payloads --output "$d/tamper.out" \
    2>"$d/tamper.err" >/dev/null
expect_rc "tampered table: client" 1 $? "$d/tamper.err" &&
    expect_grep "tampered table: client message" "does not decrypt.*PSI_E_PAYLOAD_AUTH" \
        "$d/tamper.err"
expect_no_output "tampered table" "$d/tamper.out"
wait_pid "$spid"
expect_rc "tampered table: server" 1 "$rc" "$d/tamper.server.err" &&
    expect_fixed "tampered table: the server hears why" "does not decrypt" \
        "$d/tamper.server.err"
kill -9 "$pp" 2>/dev/null
wait "$pp" 2>/dev/null

# --- refusals -------------------------------------------------------------------
round nocols "${SRV[@]}" -- "${CLI[@]}" --payloads
expect_rc "payloads from a server without columns: client" 1 "$crc" "$d/nocols.err" &&
    expect_fixed "payloads from a server without columns: message" \
        "start the server with --payload-columns" "$d/nocols.err"
expect_no_output "payloads from a server without columns" "$d/nocols.out"
expect_rc "payloads from a server without columns: server" 1 "$rc" "$d/nocols.server.err"

printf 'id,email,region\n1,a@x,n\n2,b@x,s\n3,a@x,e\n' >"$d/dup.csv"
round dup --input "$d/dup.csv" --column email --reveal --payload-columns region -- \
    "${CLI[@]}" --payloads
expect_rc "a duplicate value: client" 1 "$crc" "$d/dup.err" &&
    expect_fixed "a duplicate value: the client's message" "cannot build its payload table" \
        "$d/dup.err"
expect_rc "a duplicate value: server" 1 "$rc" "$d/dup.server.err" &&
    expect_fixed "a duplicate value: the server names the row" "row 3 is there twice" \
        "$d/dup.server.err"

# A HELLO with a flag bit this version does not know (16) is refused with
# an ERROR frame naming it.
start_server "$d/flag.server.err" "${SRV[@]}" --payload-columns region
python3 - "$port" >"$d/flag.out" 2>&1 <<'EOF'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
hello = b"SHARDPSI" + struct.pack(">HBBQQBQ", 2, 1 | 8 | 16, 255, 0, 3, 0, 0)
s.sendall(bytes([1]) + struct.pack(">Q", len(hello)) + hello)
data = b""
while True:
    d = s.recv(4096)
    if not d:
        break
    data += d
print(data[9:].decode("utf-8", "replace"))
EOF
expect_fixed "an unknown flag: the server's reply" "malformed handshake (37 bytes, flags 25)" \
    "$d/flag.out"
kill -9 "$spid" 2>/dev/null
wait "$spid" 2>/dev/null

# usage2 NAME PATTERN COMMAND ARGS...: exits 2 with PATTERN on stderr.
usage2() {
    local name=$1 pattern=$2
    shift 2
    timeout 20 "$psi" "$@" >/dev/null 2>"$d/usage.err"
    expect_rc "$name" 2 $? "$d/usage.err" && expect_fixed "$name: message" "$pattern" \
        "$d/usage.err"
}
usage2 "--payload-columns without --column" "needs a CSV input" server --no-tls \
    --listen 127.0.0.1:0 --input "$d/client.txt" --reveal --payload-columns region
usage2 "an unknown payload column" "no column 'zone'" server --no-tls \
    --listen 127.0.0.1:0 "${SRV[@]}" --payload-columns region,zone
usage2 "--share-result with gcs" "needs the raw setup" server --no-tls \
    --listen 127.0.0.1:0 "${SRV[@]}" --structure gcs --share-result --output "$d/x"
usage2 "--share-result without --output" "needs --output" server --no-tls \
    --listen 127.0.0.1:0 "${SRV[@]}" --share-result
usage2 "--share-result with --keep-serving" "not with --keep-serving" server --no-tls \
    --listen 127.0.0.1:0 "${SRV[@]}" --share-result --output "$d/x" --keep-serving
usage2 "--output without --share-result" "it needs --share-result" server --no-tls \
    --listen 127.0.0.1:0 "${SRV[@]}" --output "$d/x"
usage2 "--payload-columns without --reveal" "need --reveal" server --no-tls \
    --listen 127.0.0.1:0 --input "$d/server.csv" --column email --payload-columns region
usage2 "--payloads without --setup" "goes with --setup" server --no-tls \
    --listen 127.0.0.1:0 "${SRV[@]}" --payloads "$d/pay.bin"
usage2 "client --payloads with --indices" "not with --indices" client --no-tls \
    --connect 127.0.0.1:9 "${CLI[@]}" --payloads --indices --output "$d/x"
usage2 "client --share-result with --count-only" "not --count-only" client --no-tls \
    --connect 127.0.0.1:9 "${CLI[@]}" --share-result --count-only --output "$d/x"
usage2 "client --share-result past --memory" "past --memory" client --no-tls \
    --connect 127.0.0.1:9 "${CLI[@]}" --share-result --memory 64K --output "$d/x"
expect_no_output "usage errors" "$d/x"
# An input past --memory is read through at start: a payload past --pad-to
# fails the start, naming its row, not the first client's round.
usage2 "a payload past --pad-to, past --memory" "longer than --pad-to 4" \
    server --no-tls --listen 127.0.0.1:0 "${SRV[@]}" --payload-columns region --pad-to 4 \
    --memory 128K

echo "test_payloads_net: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
