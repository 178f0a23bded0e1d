#!/usr/bin/env bash
# Tests of `shardpsi server` and `shardpsi client` on 127.0.0.1: full rounds for each
# setup structure with the intersection revealed and not, every output
# mode, CSV and plain input, checked against a plain comparison of the
# inputs (awk), also in the suites p256-sswu and ristretto255; parameter
# (and suite) disagreements failing both sides; key files and their suite; and
# every fault of the network protocol with a clear message, a non-zero exit
# and no output file left (tests/helpers/test_net_peer.c plays the broken
# peer).
#
# Usage: tests/cli/test_net.sh PSI_BINARY TEST_NET_PEER_BINARY
# Prints one line per failed check and exits 1 if any check failed.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 PSI_BINARY TEST_NET_PEER_BINARY" >&2
    exit 2
fi
psi=$1
peer=$2
. "$(dirname "$0")/net_common.sh"

# The inputs: overlapping sets with duplicates on both sides, a value with
# a comma and one with a quote, written plain (server LF, client CRLF) and
# as CSV.
awk 'BEGIN {
    for (i = 0; i < 300; i++) print "value-" i;
    print "value-5"; print "value-250"; print "value-250";
    print "with, comma"; print "say \"hi\"";
}' >"$tmp/server.txt"
awk 'BEGIN {
    for (i = 200; i < 420; i += 2) printf "value-%d\r\n", i;
    printf "value-250\r\nvalue-250\r\nvalue-250\r\nvalue-5\r\nvalue-5\r\n";
    printf "with, comma\r\nsay \"hi\"\r\nnot there\r\n";
}' >"$tmp/client.txt"
awk 'BEGIN { print "id,name,note" }
     { sub(/\r$/, ""); v = $0; gsub(/"/, "\"\"", v);
       printf "%d,\"%s\",row %d\r\n", NR - 1, v, NR }' "$tmp/client.txt" >"$tmp/client.csv"

# Expected results, from the plain inputs.  raw pairs copies one to one
# (PROTOCOL.md §9.5): the k-th client copy of a value matches if the server
# has at least k copies; gcs and bloom test membership: every copy matches.
awk 'NR == FNR { s[$0]++; next } { sub(/\r$/, ""); c[$0]++ }
     c[$0] <= s[$0] { print FNR - 1 }' "$tmp/server.txt" "$tmp/client.txt" >"$tmp/want.raw.idx"
awk 'NR == FNR { s[$0]++; next } { sub(/\r$/, "") } ($0 in s) { print FNR - 1 }' \
    "$tmp/server.txt" "$tmp/client.txt" >"$tmp/want.member.idx"
for k in raw member; do
    awk 'NR == FNR { w[$1 + 1] = 1; next } (FNR in w) { sub(/\r$/, ""); print }' \
        "$tmp/want.$k.idx" "$tmp/client.txt" >"$tmp/want.$k.rows"
    wc -l <"$tmp/want.$k.idx" | tr -d ' ' >"$tmp/want.$k.count"
done
# The association table: client index, server index; the k-th copies pair.
awk 'NR == FNR { n[$0]++; s[$0, n[$0]] = FNR - 1; next }
     { sub(/\r$/, ""); c[$0]++ } c[$0] <= n[$0] { printf "%d\t%d\n", FNR - 1, s[$0, c[$0]] }' \
    "$tmp/server.txt" "$tmp/client.txt" >"$tmp/want.raw.assoc"

# round NAME SERVER_ARGS -- CLIENT_ARGS: one round; the client writes
# $tmp/NAME.out.  Sets $src and $crc.
round() {
    local name=$1
    shift
    local sargs=() cargs=()
    while [ "$1" != "--" ]; do sargs+=("$1"); shift; done
    shift
    cargs=("$@")
    start_server "$tmp/$name.server.err" "${sargs[@]}" || { src=x; crc=x; return; }
    "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 --output "$tmp/$name.out" \
        "${cargs[@]}" 2>"$tmp/$name.client.err" >/dev/null
    crc=$?
    wait_pid "$spid"
    src=$rc
}

# --- full rounds: each structure, each output mode --------------------------
# Bloom rounds use fixed keys.  Under fresh keys a client value that is not
# in the server set is a false positive in about 1 round of 130 here, far
# above fpr: OpenMined's double hashing gives a value whose h2 shares a
# large factor with n_bits fewer than k distinct probes (PROTOCOL.md §12.8,
# item 2).  With these keys the round is exact, and always the same.
printf '%s\n' 3c1e5a0f9d2b4e6a8c7f1d3b5a9e2c4f6b8d0a1c3e5f7a9b2d4c6e8f0a1b3c5d \
    >"$tmp/fixed.server.key"
printf '%s\n' 5d3b1a0f8e6c4a2d0b9f7e5c3a1d8b6f4e2c0a9d7b5f3e1c8a6d4b2f0e9c7a5b \
    >"$tmp/fixed.client.key"
chmod 600 "$tmp/fixed.server.key" "$tmp/fixed.client.key"
for st in raw gcs bloom; do
    k=member
    [ "$st" = raw ] && k=raw
    skey=() ckey=()
    if [ "$st" = bloom ]; then
        skey=(--key-file "$tmp/fixed.server.key")
        ckey=(--key-file "$tmp/fixed.client.key")
    fi
    round "$st-rows" --input "$tmp/server.txt" --structure "$st" --reveal "${skey[@]}" -- \
        --input "$tmp/client.txt" --threads 2 "${ckey[@]}"
    if expect_rc "$st rows: server" 0 "$src" "$tmp/$st-rows.server.err" &&
        expect_rc "$st rows: client" 0 "$crc" "$tmp/$st-rows.client.err"; then
        expect_same "$st rows" "$tmp/$st-rows.out" "$tmp/want.$k.rows"
    fi
    round "$st-idx" --input "$tmp/server.txt" --structure "$st" --reveal "${skey[@]}" -- \
        --input "$tmp/client.txt" --indices --threads 1 "${ckey[@]}"
    expect_rc "$st indices: client" 0 "$crc" "$tmp/$st-idx.client.err" &&
        expect_same "$st indices" "$tmp/$st-idx.out" "$tmp/want.$k.idx"
    # reveal off: the server allows only the count.
    round "$st-count" --input "$tmp/server.txt" --structure "$st" "${skey[@]}" -- \
        --input "$tmp/client.txt" --count-only "${ckey[@]}"
    if expect_rc "$st count: server" 0 "$src" "$tmp/$st-count.server.err" &&
        expect_rc "$st count: client" 0 "$crc" "$tmp/$st-count.client.err"; then
        expect_same "$st count" "$tmp/$st-count.out" "$tmp/want.$k.count"
        expect_grep "$st count: server log" "size only" "$tmp/$st-count.server.err"
    fi
done

# The association table, both sides opting in.
round assoc --input "$tmp/server.txt" --reveal --association -- \
    --input "$tmp/client.txt" --association
expect_rc "association: client" 0 "$crc" "$tmp/assoc.client.err" "$tmp/assoc.server.err" &&
    expect_same "association" "$tmp/assoc.out" "$tmp/want.raw.assoc"

# CSV on the client (quoted column with commas and escaped quotes), plain
# input from stdin on the server; rows come out as whole CSV rows.
{
    head -n 1 "$tmp/client.csv"
    awk 'NR == FNR { w[$1 + 2] = 1; next } (FNR in w)' "$tmp/want.raw.idx" "$tmp/client.csv"
} | sed 's/\r$//' >"$tmp/want.csv.rows"
server_stdin=$tmp/server.txt start_server "$tmp/csv.server.err" --input - --reveal
"$psi" client --no-tls --connect "127.0.0.1:$port" --input "$tmp/client.csv" --column name \
    --output "$tmp/csv.out" 2>"$tmp/csv.client.err"
crc=$?
wait_pid "$spid"
expect_rc "csv: server" 0 "$rc" "$tmp/csv.server.err"
if expect_rc "csv: client" 0 "$crc" "$tmp/csv.client.err"; then
    sed 's/\r$//' "$tmp/csv.out" >"$tmp/csv.out.lf"
    expect_same "csv rows" "$tmp/csv.out.lf" "$tmp/want.csv.rows"
fi

# Output to stdout with "-".
start_server "$tmp/stdout.server.err" --input "$tmp/server.txt" --reveal
"$psi" client --no-tls --connect "127.0.0.1:$port" --input "$tmp/client.txt" --indices \
    --output - >"$tmp/stdout.out" 2>"$tmp/stdout.client.err"
crc=$?
wait_pid "$spid"
expect_rc "stdout: client" 0 "$crc" "$tmp/stdout.client.err" &&
    expect_same "stdout indices" "$tmp/stdout.out" "$tmp/want.raw.idx"

# --keep-serving answers several clients; a broken one does not stop it.
start_server "$tmp/keep.server.err" --input "$tmp/server.txt" --reveal --keep-serving
"$peer" client-garbage "127.0.0.1:$port" 2>/dev/null
for i in 1 2; do
    "$psi" client --no-tls --connect "127.0.0.1:$port" --input "$tmp/client.txt" --indices \
        --output "$tmp/keep$i.out" 2>"$tmp/keep$i.client.err"
    expect_rc "keep-serving: client $i" 0 $? "$tmp/keep$i.client.err" "$tmp/keep.server.err" &&
        expect_same "keep-serving: client $i" "$tmp/keep$i.out" "$tmp/want.raw.idx"
done
checks=$((checks + 1))
kill -0 "$spid" 2>/dev/null || fail "keep-serving: the server exited"
kill "$spid" 2>/dev/null
wait_pid "$spid"
expect_grep "keep-serving: garbage reported" "sent a frame of unknown type" \
    "$tmp/keep.server.err"

# Progress lines: --progress prints them although stderr is a file.
round progress --input "$tmp/server.txt" --reveal --progress -- \
    --input "$tmp/client.txt" --progress
expect_grep "progress: server" "masking the setup: 305 values in" "$tmp/progress.server.err"
expect_grep "progress: client" "masking the request: 118 values in" "$tmp/progress.client.err"
checks=$((checks + 1))
grep -q "masking" "$tmp/raw-rows.server.err" "$tmp/raw-rows.client.err" &&
    fail "progress: lines without --progress on a non-terminal"

# On a terminal the progress lines are on by default (script(1) gives the
# client a pseudo-terminal).
if command -v script >/dev/null 2>&1; then
    start_server "$tmp/tty.server.err" --input "$tmp/server.txt" --reveal
    script -qec "'$psi' client --no-tls --connect 127.0.0.1:$port --input '$tmp/client.txt' \
        --output '$tmp/tty.out' --indices" /dev/null >"$tmp/tty.client.err" 2>&1
    expect_rc "tty: client" 0 $? "$tmp/tty.client.err"
    wait_pid "$spid"
    expect_grep "tty: progress by default" "masking the request: 118 values in" \
        "$tmp/tty.client.err"
    expect_same "tty: result" "$tmp/tty.out" "$tmp/want.raw.idx"
else
    echo "skipped: no script(1) for the terminal check"
fi

# IPv6 loopback, where the machine has it.
"$psi" server --no-tls --listen '[::1]:0' --input "$tmp/server.txt" --reveal --timeout 20 \
    2>"$tmp/v6.server.err" >/dev/null </dev/null &
spid=$!
pids+=("$spid")
port=
for _ in $(seq 1 100); do
    port=$(sed -n 's/.*listening on \[::1\]:\([0-9]*\).*/\1/p' "$tmp/v6.server.err")
    [ -n "$port" ] && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
done
if [ -n "$port" ]; then
    "$psi" client --no-tls --connect "[::1]:$port" --input "$tmp/client.txt" --indices \
        --output "$tmp/v6.out" 2>"$tmp/v6.client.err"
    expect_rc "ipv6: client" 0 $? "$tmp/v6.client.err" "$tmp/v6.server.err" &&
        expect_same "ipv6: result" "$tmp/v6.out" "$tmp/want.raw.idx"
    wait_pid "$spid"
else
    wait_pid "$spid"
    echo "skipped: no IPv6 loopback ($(head -c 200 "$tmp/v6.server.err"))"
fi

# --- disagreements fail both sides, saying what disagreed --------------------
# disagree NAME PATTERN SERVER_ARGS -- CLIENT_ARGS
disagree() {
    local name=$1 pattern=$2
    shift 2
    round "$name" "$@"
    expect_rc "$name: server" 1 "$src" "$tmp/$name.server.err"
    expect_rc "$name: client" 1 "$crc" "$tmp/$name.client.err"
    expect_grep "$name: server message" "$pattern" "$tmp/$name.server.err"
    expect_grep "$name: client message" "$pattern" "$tmp/$name.client.err"
    expect_no_output "$name" "$tmp/$name.out"
}
disagree structure "setup type: the client asks for gcs, the server uses raw" \
    --input "$tmp/server.txt" --reveal -- --input "$tmp/client.txt" --structure gcs
disagree fpr "fpr: the client asks for 1e-06, the server uses 1e-09" \
    --input "$tmp/server.txt" --reveal --structure bloom -- \
    --input "$tmp/client.txt" --fpr 1e-6
disagree reveal "reveals only its size: start the server with --reveal" \
    --input "$tmp/server.txt" -- --input "$tmp/client.txt"
disagree association "does not send it: start the server with --association" \
    --input "$tmp/server.txt" --reveal -- --input "$tmp/client.txt" --association
disagree overflow "fpr 1e-300 is too small for a gcs setup of 305 values queried with 118" \
    --input "$tmp/server.txt" --reveal --structure gcs --fpr 1e-300 -- --input "$tmp/client.txt"
disagree limit "more than this server accepts \(--max-peer-values 10\)" \
    --input "$tmp/server.txt" --reveal --max-peer-values 10 -- --input "$tmp/client.txt"

# --- key files ---------------------------------------------------------------
round key1 --input "$tmp/server.txt" --reveal --key-file "$tmp/server.key" -- \
    --input "$tmp/client.txt" --indices --key-file "$tmp/client.key"
expect_rc "key file: client" 0 "$crc" "$tmp/key1.client.err" "$tmp/key1.server.err" &&
    expect_same "key file: result" "$tmp/key1.out" "$tmp/want.raw.idx"
for k in server client; do
    checks=$((checks + 1))
    mode=$(stat -c %a "$tmp/$k.key" 2>/dev/null)
    [ "$mode" = 600 ] || fail "key file: $k.key has mode '$mode', not 600"
    checks=$((checks + 1))
    grep -Eqx '[0-9a-f]{64}' "$tmp/$k.key" || fail "key file: $k.key is not 64 hex digits"
done
expect_grep "key file: created" "created key file" "$tmp/key1.server.err"
round key2 --input "$tmp/server.txt" --reveal --key-file "$tmp/server.key" -- \
    --input "$tmp/client.txt" --indices --key-file "$tmp/client.key"
expect_rc "key file reused: client" 0 "$crc" "$tmp/key2.client.err" &&
    expect_same "key file reused: result" "$tmp/key2.out" "$tmp/want.raw.idx"
expect_grep "key file reused: server" "using the key of key file" "$tmp/key2.server.err"
chmod 644 "$tmp/client.key"
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/client.txt" --output "$tmp/k3.out" \
    --key-file "$tmp/client.key" 2>"$tmp/k3.err"
expect_rc "key file readable by others" 2 $? "$tmp/k3.err"
expect_grep "key file readable by others: message" "accessible to others \(mode 0644\)" \
    "$tmp/k3.err"
chmod 600 "$tmp/client.key"
printf 'zz%.0s' $(seq 1 32) >"$tmp/bad.key"
chmod 600 "$tmp/bad.key"
"$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp/server.txt" --key-file "$tmp/bad.key" \
    2>"$tmp/k4.err"
expect_rc "malformed key file" 2 $? "$tmp/k4.err"
expect_grep "malformed key file: message" "not a key \(expected 64 hex digits" "$tmp/k4.err"
# No log or message holds a key.
for k in server client; do
    checks=$((checks + 1))
    if grep -rqiF "$(cat "$tmp/$k.key")" "$tmp"/*.err; then
        fail "the $k key appears in a log"
    fi
done

# --- suites (PROTOCOL.md §16): rounds, disagreement, key files ----------------
for su in p256-sswu ristretto255; do
    for st in raw gcs; do
        k=member
        [ "$st" = raw ] && k=raw
        round "$su-$st-rows" --input "$tmp/server.txt" --structure "$st" --reveal --suite "$su" -- \
            --input "$tmp/client.txt" --threads 2 --suite "$su"
        if expect_rc "$su $st rows: server" 0 "$src" "$tmp/$su-$st-rows.server.err" &&
            expect_rc "$su $st rows: client" 0 "$crc" "$tmp/$su-$st-rows.client.err"; then
            expect_same "$su $st rows" "$tmp/$su-$st-rows.out" "$tmp/want.$k.rows"
            expect_grep "$su $st rows: server log" "suite $su" "$tmp/$su-$st-rows.server.err"
        fi
        round "$su-$st-count" --input "$tmp/server.txt" --structure "$st" --suite "$su" -- \
            --input "$tmp/client.txt" --count-only --suite "$su"
        if expect_rc "$su $st count: server" 0 "$src" "$tmp/$su-$st-count.server.err" &&
            expect_rc "$su $st count: client" 0 "$crc" "$tmp/$su-$st-count.client.err"; then
            expect_same "$su $st count" "$tmp/$su-$st-count.out" "$tmp/want.$k.count"
        fi
    done
done
round ristretto255-assoc --input "$tmp/server.txt" --reveal --association --suite ristretto255 -- \
    --input "$tmp/client.txt" --association --suite ristretto255
expect_rc "ristretto255 association: client" 0 "$crc" "$tmp/ristretto255-assoc.client.err" &&
    expect_same "ristretto255 association" "$tmp/ristretto255-assoc.out" "$tmp/want.raw.assoc"
disagree suite-default "suite: the client uses openmined-p256, the server uses ristretto255" \
    --input "$tmp/server.txt" --reveal --suite ristretto255 -- --input "$tmp/client.txt"
disagree suite-both "suite: the client uses ristretto255, the server uses p256-sswu" \
    --input "$tmp/server.txt" --reveal --suite p256-sswu -- \
    --input "$tmp/client.txt" --suite ristretto255
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/client.txt" --output "$tmp/s1.out" \
    --suite p384 2>"$tmp/s1.err"
expect_rc "unknown suite" 2 $? "$tmp/s1.err"
expect_grep "unknown suite: message" "--suite: unknown suite 'p384'" "$tmp/s1.err"
# A key file records its suite, and is refused in another.
round skey1 --input "$tmp/server.txt" --reveal --suite ristretto255 \
    --key-file "$tmp/server.r255.key" -- --input "$tmp/client.txt" --indices \
    --suite ristretto255 --key-file "$tmp/client.r255.key"
expect_rc "ristretto255 key file: client" 0 "$crc" "$tmp/skey1.client.err" \
    "$tmp/skey1.server.err" && expect_same "ristretto255 key file: result" "$tmp/skey1.out" \
    "$tmp/want.raw.idx"
checks=$((checks + 1))
grep -Eqx '[0-9a-f]{64} ristretto255' "$tmp/server.r255.key" ||
    fail "ristretto255 key file: not 64 hex digits and the suite: $(wc -c <"$tmp/server.r255.key") bytes"
round skey2 --input "$tmp/server.txt" --reveal --suite ristretto255 \
    --key-file "$tmp/server.r255.key" -- --input "$tmp/client.txt" --indices \
    --suite ristretto255 --key-file "$tmp/client.r255.key"
expect_rc "ristretto255 key file reused: client" 0 "$crc" "$tmp/skey2.client.err" &&
    expect_same "ristretto255 key file reused: result" "$tmp/skey2.out" "$tmp/want.raw.idx"
expect_grep "ristretto255 key file reused" "using the key of key file" "$tmp/skey2.server.err"
"$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp/server.txt" \
    --key-file "$tmp/server.r255.key" 2>"$tmp/sk3.err"
expect_rc "key file of another suite" 2 $? "$tmp/sk3.err"
expect_grep "key file of another suite: message" \
    "holds a key of suite ristretto255, and this run uses suite openmined-p256: give --suite ristretto255" \
    "$tmp/sk3.err"
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/client.txt" --output "$tmp/sk4.out" \
    --suite p256-sswu --key-file "$tmp/fixed.client.key" 2>"$tmp/sk4.err"
expect_rc "openmined-p256 key file in p256-sswu" 2 $? "$tmp/sk4.err"
expect_grep "openmined-p256 key file in p256-sswu: message" \
    "holds a key of suite openmined-p256, and this run uses suite p256-sswu" "$tmp/sk4.err"
expect_no_output "openmined-p256 key file in p256-sswu" "$tmp/sk4.out"
# A ristretto255 key is a canonical little-endian scalar: 2^256 - 1 is not.
printf '%s ristretto255\n' "$(printf 'ff%.0s' $(seq 1 32))" >"$tmp/big.r255.key"
chmod 600 "$tmp/big.r255.key"
"$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp/server.txt" --suite ristretto255 \
    --key-file "$tmp/big.r255.key" 2>"$tmp/sk5.err"
expect_rc "ristretto255 key out of range" 2 $? "$tmp/sk5.err"
for k in server client; do
    checks=$((checks + 1))
    if grep -rqiF "$(cut -c 1-64 "$tmp/$k.r255.key")" "$tmp"/*.err; then
        fail "the ristretto255 $k key appears in a log"
    fi
done

# --- prebuilt setups: shardpsi setup, then shardpsi server --setup (PROTOCOL.md §15.5) --
# The setup of each structure made offline, served to a plain client.  gcs
# is made for more client values (200) than the client has (118), bloom for
# exactly as many; bloom uses the fixed server key (see above).
"$psi" keygen --output "$tmp/pre.key" 2>"$tmp/pre.keygen.err"
expect_rc "prebuilt: keygen" 0 $? "$tmp/pre.keygen.err"
for st in raw gcs bloom; do
    k=member key=$tmp/pre.key popts=() sopts=() copts=()
    case $st in
    raw) k=raw popts=(--permutation "$tmp/pre.raw.perm") ;;
    gcs) popts=(--fpr 1e-6 --num-client-inputs 200)
         sopts=(--fpr 1e-6 --num-client-inputs 200)
         copts=(--structure gcs --fpr 1e-6) ;;
    bloom) key=$tmp/fixed.server.key
           popts=(--num-client-inputs 118) sopts=(--num-client-inputs 118)
           copts=(--key-file "$tmp/fixed.client.key") ;;
    esac
    "$psi" setup --key-file "$key" --input "$tmp/server.txt" --structure "$st" \
        "${popts[@]}" --output "$tmp/pre.$st" 2>"$tmp/pre-$st.setup.err"
    expect_rc "prebuilt $st: shardpsi setup" 0 $? "$tmp/pre-$st.setup.err" || continue
    round "pre-$st-rows" --key-file "$key" --setup "$tmp/pre.$st" --reveal "${sopts[@]}" -- \
        --input "$tmp/client.txt" "${copts[@]}"
    if expect_rc "prebuilt $st rows: server" 0 "$src" "$tmp/pre-$st-rows.server.err" &&
        expect_rc "prebuilt $st rows: client" 0 "$crc" "$tmp/pre-$st-rows.client.err"; then
        expect_same "prebuilt $st rows" "$tmp/pre-$st-rows.out" "$tmp/want.$k.rows"
        expect_grep "prebuilt $st rows: server log" "with the setup file .*pre\.$st" \
            "$tmp/pre-$st-rows.server.err"
    fi
    round "pre-$st-count" --key-file "$key" --setup "$tmp/pre.$st" "${sopts[@]}" -- \
        --input "$tmp/client.txt" --count-only "${copts[@]}"
    if expect_rc "prebuilt $st count: server" 0 "$src" "$tmp/pre-$st-count.server.err" &&
        expect_rc "prebuilt $st count: client" 0 "$crc" "$tmp/pre-$st-count.client.err"; then
        expect_same "prebuilt $st count" "$tmp/pre-$st-count.out" "$tmp/want.$k.count"
        expect_grep "prebuilt $st count: server log" "size only" "$tmp/pre-$st-count.server.err"
    fi
done
# The association table from the permutation shardpsi setup wrote.
round pre-assoc --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --reveal --association \
    --permutation "$tmp/pre.raw.perm" -- --input "$tmp/client.txt" --association
expect_rc "prebuilt association: client" 0 "$crc" "$tmp/pre-assoc.client.err" \
    "$tmp/pre-assoc.server.err" &&
    expect_same "prebuilt association" "$tmp/pre-assoc.out" "$tmp/want.raw.assoc"
# The same in a 4 KiB budget: the permutation checked from many runs, the
# response through the step.
round pre-assoc-4k --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --reveal --association \
    --permutation "$tmp/pre.raw.perm" --memory 4K -- --input "$tmp/client.txt" --association
expect_rc "prebuilt association, 4K: client" 0 "$crc" "$tmp/pre-assoc-4k.client.err" \
    "$tmp/pre-assoc-4k.server.err" &&
    expect_same "prebuilt association, 4K" "$tmp/pre-assoc-4k.out" "$tmp/want.raw.assoc"
# Another suite, several clients one after another.
"$psi" keygen --suite ristretto255 --output "$tmp/pre.r255.key" 2>/dev/null
"$psi" setup --suite ristretto255 --key-file "$tmp/pre.r255.key" --input "$tmp/server.txt" \
    --structure gcs --num-client-inputs 118 --output "$tmp/pre.r255.gcs" 2>"$tmp/pre-r255.err"
expect_rc "prebuilt ristretto255: shardpsi setup" 0 $? "$tmp/pre-r255.err"
start_server "$tmp/pre-keep.server.err" --suite ristretto255 --key-file "$tmp/pre.r255.key" \
    --setup "$tmp/pre.r255.gcs" --num-client-inputs 118 --reveal --keep-serving
for i in 1 2; do
    "$psi" client --no-tls --connect "127.0.0.1:$port" --suite ristretto255 --input "$tmp/client.txt" \
        --indices --output "$tmp/pre-keep$i.out" 2>"$tmp/pre-keep$i.client.err"
    expect_rc "prebuilt keep-serving: client $i" 0 $? "$tmp/pre-keep$i.client.err" \
        "$tmp/pre-keep.server.err" &&
        expect_same "prebuilt keep-serving: client $i" "$tmp/pre-keep$i.out" \
            "$tmp/want.member.idx"
done
kill "$spid" 2>/dev/null
wait_pid "$spid"
# A client with more values than the setup was made for: both sides say so.
"$psi" setup --key-file "$tmp/pre.key" --input "$tmp/server.txt" --structure gcs \
    --num-client-inputs 100 --output "$tmp/pre.gcs100" 2>/dev/null
disagree pre-limit "the client announces 118 values, more than the 100 this server's gcs setup was built for" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.gcs100" --num-client-inputs 100 --reveal -- \
    --input "$tmp/client.txt"
# Faults: exit 2 before listening, with a message.
# pre_fault NAME PATTERN SERVER_ARGS...
pre_fault() {
    local name=$1 pattern=$2
    shift 2
    # (under timeout: a server that wrongly starts would wait for a client)
    timeout 20 "$psi" server --no-tls --listen 127.0.0.1:0 "$@" 2>"$tmp/$name.err" </dev/null
    expect_rc "$name" 2 $? "$tmp/$name.err"
    expect_grep "$name: message" "$pattern" "$tmp/$name.err"
    checks=$((checks + 1))
    grep -q "listening on" "$tmp/$name.err" && fail "$name: the server listened"
}
pre_fault pre-no-key "--setup needs --key-file KEY, the key file the setup was made with" \
    --setup "$tmp/pre.raw"
pre_fault pre-input "give --input FILE or --setup SETUP, not both" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --input "$tmp/server.txt"
pre_fault pre-lines "give --input FILE or --setup SETUP, not both" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --lines
pre_fault pre-suite "setup file .*pre\.r255\.gcs is a setup of suite ristretto255, and the key file and this run are of suite openmined-p256" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.r255.gcs" --num-client-inputs 118
head -c 1000 "$tmp/pre.raw" >"$tmp/pre.cut"
pre_fault pre-truncated "setup file .*pre\.cut is not a valid ServerSetup of suite openmined-p256: .*PSI_E_MSG_TRUNCATED" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.cut"
pre_fault pre-key-missing "key file .*nokey does not exist: --setup needs the key file" \
    --key-file "$tmp/nokey" --setup "$tmp/pre.raw"
checks=$((checks + 1))
[ -e "$tmp/nokey" ] && fail "prebuilt: a missing key file was created"
pre_fault pre-no-nci "holds a gcs setup: give --num-client-inputs N" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.gcs"
pre_fault pre-assoc-no-perm "--association with --setup needs --permutation PERM" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --reveal --association
head -n 5 "$tmp/pre.raw.perm" >"$tmp/pre.perm5"
pre_fault pre-perm-short "permutation file .*pre\.perm5 holds 5 rows, and the setup has 305 elements" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --reveal --association \
    --permutation "$tmp/pre.perm5"
# The permutation is read through a window and checked from sorted runs on
# disk (nothing of it held): a row given twice is named, and the runs'
# directory must be writable.
{ head -n 1 "$tmp/pre.raw.perm"; head -n 1 "$tmp/pre.raw.perm"; tail -n +3 "$tmp/pre.raw.perm"; } \
    >"$tmp/pre.perm-twice"
pre_fault pre-perm-twice "permutation file .*pre\.perm-twice: row $(head -n 1 "$tmp/pre.raw.perm") is given twice \(the setup has 305 elements\)" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --reveal --association \
    --permutation "$tmp/pre.perm-twice" --memory 4K
{ head -n 2 "$tmp/pre.raw.perm"; echo x; tail -n +4 "$tmp/pre.raw.perm"; } >"$tmp/pre.perm-x"
pre_fault pre-perm-syntax "permutation file .*pre\.perm-x, line 3: not a 0-based row index" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --reveal --association \
    --permutation "$tmp/pre.perm-x"
pre_fault pre-perm-tmp "temporary directory $tmp/no-dir: cannot create a file" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --reveal --association \
    --permutation "$tmp/pre.raw.perm" --temp-dir "$tmp/no-dir"
pre_fault pre-structure "holds a raw setup, not the gcs of --structure" \
    --key-file "$tmp/pre.key" --setup "$tmp/pre.raw" --structure gcs

# --- faults: a message, a non-zero exit, nothing written ---------------------
# Bad input files: exit 2 before any connection.
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/missing.txt" --output "$tmp/f1.out" \
    2>"$tmp/f1.err"
expect_rc "missing input" 2 $? "$tmp/f1.err"
expect_grep "missing input: message" "missing.txt: cannot open: No such file" "$tmp/f1.err"
expect_no_output "missing input" "$tmp/f1.out"
printf 'id,name\n1,a\n2,"b\n' >"$tmp/bad.csv"
"$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp/bad.csv" --column name 2>"$tmp/f2.err"
expect_rc "malformed csv" 2 $? "$tmp/f2.err"
expect_grep "malformed csv: message" "bad.csv: line 3" "$tmp/f2.err"
printf 'id,name\n1,a\n2,b,c\n' >"$tmp/bad2.csv"
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/bad2.csv" --column name \
    --output "$tmp/f3.out" 2>"$tmp/f3.err"
expect_rc "csv field count" 2 $? "$tmp/f3.err"
expect_grep "csv field count: message" "bad2.csv: line 3" "$tmp/f3.err"
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/client.csv" --column nosuch \
    --output "$tmp/f4.out" 2>"$tmp/f4.err"
expect_rc "csv column missing" 2 $? "$tmp/f4.err"
expect_grep "csv column missing: message" "nosuch" "$tmp/f4.err"
"$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp" 2>"$tmp/f4b.err"
expect_rc "input is a directory" 2 $? "$tmp/f4b.err"
expect_grep "input is a directory: message" "cannot open: Is a directory" "$tmp/f4b.err"
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/client.txt" \
    --output "$tmp/nodir/out" 2>"$tmp/f5.err"
expect_rc "output directory missing" 2 $? "$tmp/f5.err"
# The CSV guard (app/app_input.h): the README's example one option short --
# a .csv without --column -- is refused before any connection, with exit 2,
# a message naming the file and both options, and no output file; so is a
# header line in a file of another name, on either side, and from stdin.
# (A server that wrongly took its input would wait for a client: each runs
# under `timeout`, so a regression fails here instead of hanging.)
guard="looks like CSV (first line \"id,name,note\"); add --column NAME to read a column, or --lines to read every line as a value"
cp "$tmp/client.csv" "$tmp/leads.txt"
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/client.csv" --output "$tmp/g1.out" \
    2>"$tmp/g1.err"
expect_rc "guard: client .csv" 2 $? "$tmp/g1.err"
checks=$((checks + 1))
grep -qxF "shardpsi: client: $tmp/client.csv: $guard" "$tmp/g1.err" ||
    fail "guard: client .csv: message: $(head -c 400 "$tmp/g1.err")"
expect_no_output "guard: client .csv" "$tmp/g1.out"
timeout 20 "$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp/leads.txt" --reveal 2>"$tmp/g2.err"
expect_rc "guard: server header line" 2 $? "$tmp/g2.err"
expect_fixed "guard: server header line: message" "server: $tmp/leads.txt: $guard" "$tmp/g2.err"
timeout 20 "$psi" server --no-tls --listen 127.0.0.1:0 --input - --reveal <"$tmp/client.csv" 2>"$tmp/g3.err"
expect_rc "guard: server stdin" 2 $? "$tmp/g3.err"
expect_fixed "guard: server stdin: message" "server: stdin: $guard" "$tmp/g3.err"
both="give --column NAME (read a CSV column) or --lines (read every line as a value), not both"
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/client.csv" --lines --column name \
    --output "$tmp/g4.out" 2>"$tmp/g4.err"
expect_rc "guard: client --lines --column" 2 $? "$tmp/g4.err"
expect_fixed "guard: client --lines --column: message" "client: $both" "$tmp/g4.err"
expect_no_output "guard: client --lines --column" "$tmp/g4.out"
timeout 20 "$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp/client.csv" --column name --lines \
    2>"$tmp/g5.err"
expect_rc "guard: server --column --lines" 2 $? "$tmp/g5.err"
expect_fixed "guard: server --column --lines: message" "server: $both" "$tmp/g5.err"
# --lines reads both as lines, the header too: every client row matches.
round lines --input "$tmp/leads.txt" --lines --reveal -- --input "$tmp/client.csv" --lines \
    --indices
expect_rc "guard: --lines: server" 0 "$src" "$tmp/lines.server.err" &&
    expect_rc "guard: --lines: client" 0 "$crc" "$tmp/lines.client.err" &&
    expect_same "guard: --lines reads every line" "$tmp/lines.out" \
        <(seq 0 $(($(wc -l <"$tmp/client.csv") - 1)))

# Usage errors: exit 2.
"$psi" client --no-tls --connect nowhere --input "$tmp/client.txt" --output "$tmp/u1.out" 2>"$tmp/u1.err"
expect_rc "address without a port" 2 $? "$tmp/u1.err"
expect_grep "address without a port: message" "'nowhere' is not HOST:PORT" "$tmp/u1.err"
"$psi" server --no-tls --listen 127.0.0.1:99999 --input "$tmp/server.txt" 2>"$tmp/u2.err"
expect_rc "port out of range" 2 $? "$tmp/u2.err"
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/client.txt" --output "$tmp/u3.out" \
    --indices --count-only 2>"$tmp/u3.err"
expect_rc "two output modes" 2 $? "$tmp/u3.err"
"$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp/server.txt" --association 2>"$tmp/u4.err"
expect_rc "association without reveal" 2 $? "$tmp/u4.err"
expect_grep "association without reveal: message" "needs --reveal" "$tmp/u4.err"
"$psi" client --no-tls --connect 127.0.0.1:1 --input "$tmp/client.txt" 2>"$tmp/u5.err"
expect_rc "no output" 2 $? "$tmp/u5.err"
expect_grep "no output: message" "--output FILE is required" "$tmp/u5.err"
"$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp/server.txt" --fpr 2 2>"$tmp/u6.err"
expect_rc "fpr out of range" 2 $? "$tmp/u6.err"
"$psi" --help >"$tmp/help.out"
expect_grep "shardpsi --help lists --suite" "--suite NAME" "$tmp/help.out"
for c in server client; do
    expect_grep "shardpsi --help lists $c" "^  $c " "$tmp/help.out"
    "$psi" help "$c" >"$tmp/help.$c" 2>&1
    expect_rc "shardpsi help $c" 0 $? "$tmp/help.$c"
    expect_grep "shardpsi help $c lists --suite" "^  --suite NAME" \
        "$tmp/help.$c"
done

# Connection refused: a port nobody listens on (the peer's, after it exits).
"$peer" server-close-after-accept >"$tmp/port" 2>/dev/null &
ppid_=$!
pids+=("$ppid_")
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
p=$(cat "$tmp/port")
# ... first the peer itself: it accepts, then closes after the handshake.
"$psi" client --no-tls --connect "127.0.0.1:$p" --input "$tmp/client.txt" --output "$tmp/f6.out" \
    2>"$tmp/f6.err"
expect_rc "peer closes mid-run" 1 $? "$tmp/f6.err"
expect_grep "peer closes mid-run: message" "closed the connection" "$tmp/f6.err"
expect_no_output "peer closes mid-run" "$tmp/f6.out"
wait_pid "$ppid_"
"$psi" client --no-tls --connect "127.0.0.1:$p" --input "$tmp/client.txt" --output "$tmp/f7.out" \
    2>"$tmp/f7.err"
expect_rc "connection refused" 1 $? "$tmp/f7.err"
expect_grep "connection refused: message" "Connection refused" "$tmp/f7.err"
expect_no_output "connection refused" "$tmp/f7.out"

# peer_server MODE NAME PATTERN [CLIENT_ARGS]: the client against a broken
# server must exit 1 with PATTERN and write nothing.
peer_server() {
    local mode=$1 name=$2 pattern=$3
    shift 3
    : >"$tmp/port"
    "$peer" "$mode" >"$tmp/port" 2>"$tmp/$name.peer.err" &
    local pp=$!
    pids+=("$pp")
    for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
    "$psi" client --no-tls --connect "127.0.0.1:$(cat "$tmp/port")" --input "$tmp/client.txt" \
        --output "$tmp/$name.out" "$@" 2>"$tmp/$name.err"
    expect_rc "$name" 1 $? "$tmp/$name.err"
    expect_grep "$name: message" "$pattern" "$tmp/$name.err"
    expect_no_output "$name" "$tmp/$name.out"
    [ "$mode" = server-silent ] && kill -9 "$pp" 2>/dev/null
    wait_pid "$pp"
    peer_rc=$rc
}
peer_server server-oversized oversized-frame "setup frame of [0-9]+ bytes .*is larger than the limit"
peer_server server-silent timeout "for 2 s" --timeout 2
peer_server server-invalid-points invalid-points \
    "Response.encrypted_elements\\[[0-9]+\\]: invalid point: x coordinate .*PSI_E_POINT_X_RANGE"
expect_rc "invalid points: the server was told" 0 "$peer_rc" "$tmp/invalid-points.peer.err"

# peer_client MODE NAME PATTERN [SERVER_ARGS]: the server against a broken
# client must exit 1 with PATTERN.
peer_client() {
    local mode=$1 name=$2 pattern=$3
    shift 3
    start_server "$tmp/$name.server.err" --input "$tmp/server.txt" --reveal "$@" || return
    "$peer" "$mode" "127.0.0.1:$port" 2>"$tmp/$name.peer.err" &
    local pp=$!
    pids+=("$pp")
    wait_pid "$spid"
    local server_rc=$rc
    [ "$mode" = client-silent ] && kill -9 "$pp" 2>/dev/null
    wait_pid "$pp"
    peer_rc=$rc
    rc=$server_rc
    expect_rc "$name: server" 1 "$rc" "$tmp/$name.server.err"
    expect_grep "$name: message" "$pattern" "$tmp/$name.server.err"
}
peer_client client-invalid-points client-invalid \
    "request is invalid: Request.encrypted_elements\\[[0-9]+\\]: invalid point: .*PSI_E_POINT_X_RANGE"
expect_rc "client invalid points: told" 0 "$peer_rc" "$tmp/client-invalid.peer.err"
peer_client client-oversized client-oversized "request frame of [0-9]+ bytes .*is larger than the limit"
peer_client client-killed-mid-request client-killed "closed the connection"
peer_client client-silent client-silent "for 2 s" --timeout 2
peer_server server-v1 server-v1 "the server speaks version 1, this side version 2"
# A hostile setup is refused before matching (PROTOCOL.md §9.7), and the
# server is told.
peer_server server-bloom-k bloom-k "setup is not one of the agreed parameters: .*PSI_E_BLOOM_HASHES"
expect_rc "hostile bloom k: the server was told" 0 "$peer_rc" "$tmp/bloom-k.peer.err"
peer_server server-gcs-div0 gcs-div0 "setup is not one of the agreed parameters: .*PSI_E_SETUP_MISMATCH"
expect_rc "hostile gcs div 0: the server was told" 0 "$peer_rc" "$tmp/gcs-div0.peer.err"

# --- connections that end before an agreed handshake ------------------------
# A one-round server logs each and goes on waiting: garbage, a port touched
# and closed (a health check), keepalives without a HELLO (refused at the
# first), a HELLO a byte a second (ended by the handshake deadline, which
# bytes do not extend), a version 1 client; then a real client gets its
# round and the server exits 0.
start_server "$tmp/probe.server.err" --input "$tmp/server.txt" --reveal --handshake-timeout 2
"$peer" client-garbage "127.0.0.1:$port" 2>"$tmp/probe1.peer.err"
(echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null
"$peer" client-keepalive-hold "127.0.0.1:$port" 2>"$tmp/probe3.peer.err"
expect_rc "keepalive hold: ended by the server" 0 $? "$tmp/probe3.peer.err"
t0=$(date +%s)
"$peer" client-slow-hello "127.0.0.1:$port" 2>"$tmp/probe4.peer.err"
expect_rc "slow hello: ended by the server" 0 $? "$tmp/probe4.peer.err"
checks=$((checks + 1))
[ -n "${PSI_UNDER_VALGRIND:-}" ] || [ $(($(date +%s) - t0)) -le 8 ] ||
    fail "slow hello: held the server $(($(date +%s) - t0)) s"
"$peer" client-v1 "127.0.0.1:$port" 2>"$tmp/probe5.peer.err"
expect_rc "version 1 client: refused naming both versions" 0 $? "$tmp/probe5.peer.err"
checks=$((checks + 1))
kill -0 "$spid" 2>/dev/null || fail "probes: the one-round server exited"
"$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 --input "$tmp/client.txt" \
    --indices --output "$tmp/probe.out" 2>"$tmp/probe.client.err"
expect_rc "after probes: client" 0 $? "$tmp/probe.client.err" "$tmp/probe.server.err" &&
    expect_same "after probes" "$tmp/probe.out" "$tmp/want.raw.idx"
wait_pid "$spid"
expect_rc "after probes: server" 0 "$rc" "$tmp/probe.server.err"
expect_grep "probe: garbage logged" "connection from 127\.0\.0\.1:[0-9]+ \(no TLS\) ended before a handshake .*unknown type 71" "$tmp/probe.server.err"
expect_grep "probe: port touched logged" "ended before a handshake .*closed the connection" "$tmp/probe.server.err"
expect_grep "probe: keepalive refused" "keepalive before the handshake" "$tmp/probe.server.err"
expect_grep "probe: deadline" "ended before a handshake \([2-4]\.[0-9] s\)" "$tmp/probe.server.err"
expect_grep "probe: version 1" "speaks version 1, this side version 2" "$tmp/probe.server.err"
expect_grep "probe: the round logged" "answered 127\.0\.0\.1:[0-9]+ \(no TLS\): 118 client values against 305 values, raw setup, suite openmined-p256, intersection revealed, in [0-9.]+ s" "$tmp/probe.server.err"

# --- a busy server: slow and silent peers do not delay another client -------
# One peer trickles its HELLO, one announces a million values and sends
# nothing more (the server builds nothing for it: no setup within 3 s), one
# holds a finished handshake; a real client still finishes in seconds.
start_server "$tmp/busy.server.err" --input "$tmp/server.txt" --reveal --keep-serving \
    --structure bloom --key-file "$tmp/fixed.server.key"
"$peer" client-slow-hello "127.0.0.1:$port" 2>"$tmp/busy1.peer.err" &
b1=$!
"$peer" client-announce-1000000 "127.0.0.1:$port" 2>"$tmp/busy2.peer.err" &
b2=$!
"$peer" client-silent "127.0.0.1:$port" 2>/dev/null &
b3=$!
pids+=("$b1" "$b2" "$b3")
sleep 0.5
t0=$(date +%s)
"$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 --input "$tmp/client.txt" \
    --indices --key-file "$tmp/fixed.client.key" --output "$tmp/busy.out" 2>"$tmp/busy.client.err"
expect_rc "busy server: client" 0 $? "$tmp/busy.client.err" "$tmp/busy.server.err" &&
    expect_same "busy server" "$tmp/busy.out" "$tmp/want.member.idx"
# (Under valgrind the client alone takes longer than the slow peer's
# deadline, so only the result is checked there.)
checks=$((checks + 1))
[ -n "${PSI_UNDER_VALGRIND:-}" ] || [ $(($(date +%s) - t0)) -le 6 ] ||
    fail "busy server: the client took $(($(date +%s) - t0)) s"
wait_pid "$b2"
expect_rc "announced size: no setup before the request" 0 "$rc" "$tmp/busy2.peer.err"
kill -9 "$spid" "$b1" "$b3" 2>/dev/null
wait "$spid" "$b1" "$b3" 2>/dev/null

# --- accept() failures are logged and survived --------------------------------
# With 4 descriptors the listening socket is the last one: every accept()
# fails with EMFILE.  The server logs it and keeps listening.
(ulimit -n 4; exec "$psi" server --no-tls --listen 127.0.0.1:0 --input "$tmp/server.txt" \
    --keep-serving) 2>"$tmp/emfile.err" >/dev/null </dev/null &
epid=$!
pids+=("$epid")
for _ in $(seq 1 100); do
    ep=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/emfile.err")
    [ -n "$ep" ] && break
    sleep 0.05
done
(exec 3<>"/dev/tcp/127.0.0.1/$ep"; sleep 2) 2>/dev/null
checks=$((checks + 1))
kill -0 "$epid" 2>/dev/null || fail "EMFILE: the server exited"
expect_grep "EMFILE: logged" "error: .*(Too many open files|EMFILE).*still listening" "$tmp/emfile.err"
kill -9 "$epid" 2>/dev/null
wait "$epid" 2>/dev/null

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
