#!/usr/bin/env bash
# No work before commitment (issue 54, points 3 and 5): `shardpsi server`
# masks nothing for a client until its request has arrived and been
# checked, stops a round whose client has gone, sizes what it allocates by
# what arrived, and tells the client only that it failed when the failure
# is its own (the detail stays in its log).  The clients are
# tests/cli/commit_peer.py (plain TCP, or TLS with a pinned client key)
# and `shardpsi client`.
#  - six HELLOs that close at once cost the server under a second of CPU
#    (its own and its reaped rounds', from /proc/PID/stat) at 50,000
#    values, with a fresh key each round, with --key-file (the raw setup
#    then masked once at start; honest rounds still match) and over TLS
#    with pinned keys (six authenticated HELLOs);
#  - the setup masked at start gives every output a round's own gives;
#  - a client that sends a valid request and closes: its round stops at
#    the next chunk (under a second of CPU, "stopped" in the log), in
#    memory and past the budget, where a short request is refused too;
#  - a 57-byte request after a HELLO announcing 2*10^7 values is refused by
#    its size before a response buffer is made (under a 600 MB address
#    space limit: the 700 MB buffer would fail as "out of memory");
#  - a HELLO announcing 10^8 values to a server past its budget puts
#    nothing on its temporary disk while the client holds it with
#    keepalives;
#  - a full temporary disk (a 256 KiB tmpfs; skipped unless root) gives the
#    client "the server failed this round (see its log)", never the path or
#    the disk's state, and the server's log the detail.
#
# Usage: tests/cli/test_net_commit.sh PSI_BINARY
# Prints one line per failed check and exits 1 if any check failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 PSI_BINARY" >&2
    exit 2
fi
psi=$1
peer="/usr/bin/python3 $(dirname "$0")/commit_peer.py"
. "$(dirname "$0")/net_common.sh"
hz=$(getconf CLK_TCK)

awk 'BEGIN { for (i = 0; i < 50000; i++) print "value-" i }' >"$tmp/server.txt"
awk 'BEGIN { for (i = 0; i < 200; i++) print "value-" (i * 500 + 7) }' >"$tmp/client.txt"
# The matches: the client's values below 50,000 (100 of its 200).
awk -F- '$2 < 50000' "$tmp/client.txt" | sort >"$tmp/want"

# cpu_ticks PID: the CPU PID and its reaped children used (utime, stime,
# cutime, cstime of /proc/PID/stat, in clock ticks).
cpu_ticks() {
    # The fields after the command's ")" start at the state (field 3).
    sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 + $14 + $15 }'
}

# wait_rounds LOG COUNT: waits at most 60 s for COUNT lines of ended rounds
# in LOG and for the server ($spid) to have no child left (all reaped).
wait_rounds() {
    for _ in $(seq 1 600); do
        local ended
        ended=$(grep -Ec "round with|connection from .* ended|answered" "$1")
        if [ "$ended" -ge "$2" ] && [ -z "$(cat /proc/"$spid"/task/*/children 2>/dev/null |
            tr -d ' ')" ]; then
            return 0
        fi
        sleep 0.1
    done
    fail "$1: $2 rounds did not end within 60 s"
    show "$1"
    return 1
}

# expect_cpu WHAT BEFORE AFTER: checks that under a second of CPU was used.
expect_cpu() {
    checks=$((checks + 1))
    local used=$(($3 - $2))
    echo "$1: $used of $hz ticks a second of server CPU"
    [ "$used" -lt "$hz" ] || fail "$1: the server used $used/$hz s of CPU, not under 1 s"
}

# Six HELLOs that close at once, with a fresh key each round (the raw setup
# masked after the request) and with --key-file (masked at start), and six
# authenticated ones over TLS (pinned keys from tls-keygen).
"$psi" tls-keygen --cert "$tmp/s.pem" --key "$tmp/s.tkey" --name server >"$tmp/s.fp" \
    2>"$tmp/tls.err" &&
    "$psi" tls-keygen --cert "$tmp/c.pem" --key "$tmp/c.tkey" --name client >"$tmp/c.fp" \
        2>"$tmp/tls.err"
expect_rc "tls-keygen" 0 "$?" "$tmp/tls.err"
for keyed in fresh keyed tls; do
    kargs=()
    [ "$keyed" = keyed ] && kargs=(--key-file "$tmp/server.key")
    [ "$keyed" = tls ] && kargs=(--tls-cert "$tmp/s.pem" --tls-key "$tmp/s.tkey"
        --tls-peer-key "$(cat "$tmp/c.fp")")
    start_tls=
    [ "$keyed" = tls ] && start_tls=1
    start_server "$tmp/hello-$keyed.srv" --input "$tmp/server.txt" --reveal --keep-serving \
        --max-clients 6 "${kargs[@]}" || continue
    before=$(cpu_ticks "$spid")
    if [ "$keyed" = tls ]; then
        COMMIT_TLS_CERT=$tmp/c.pem COMMIT_TLS_KEY=$tmp/c.tkey \
            $peer hello-close "$port" 50000 6 2>"$tmp/hello-$keyed.peer"
    else
        $peer hello-close "$port" 50000 6 2>"$tmp/hello-$keyed.peer"
    fi
    expect_rc "six HELLOs ($keyed key)" 0 "$?" "$tmp/hello-$keyed.peer"
    wait_rounds "$tmp/hello-$keyed.srv" 6 &&
        expect_cpu "six HELLOs that close ($keyed key)" "$before" "$(cpu_ticks "$spid")"
    [ "$keyed" = tls ] && expect_grep "six authenticated HELLOs" \
        "round with 127\.0\.0\.1:[0-9]+ \(CN=client, key sha256" "$tmp/hello-$keyed.srv"
    start_tls=
    if [ "$keyed" = tls ]; then
        kill "$spid" 2>/dev/null
        wait_pid "$spid"
        continue
    fi
    # An honest client is answered as before, twice from the same setup.
    for i in 1 2; do
        "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 \
            --input "$tmp/client.txt" --output "$tmp/hello-$keyed.$i.out" \
            2>"$tmp/hello-$keyed.$i.cli"
        expect_rc "an honest round after the HELLOs ($keyed key, $i)" 0 "$?" \
            "$tmp/hello-$keyed.$i.cli" "$tmp/hello-$keyed.srv"
        sort "$tmp/hello-$keyed.$i.out" >"$tmp/hello-$keyed.$i.sorted" 2>/dev/null
        expect_same "an honest round after the HELLOs ($keyed key, $i)" \
            "$tmp/hello-$keyed.$i.sorted" "$tmp/want"
    done
    [ "$keyed" = keyed ] && expect_fixed "the raw setup masked once" \
        "masked the raw setup of 50000 values once" "$tmp/hello-$keyed.srv"
    kill "$spid" 2>/dev/null
    wait_pid "$spid"
done

# The raw setup masked at start serves every output of a round as one
# masked in the round does: rows, count only, the association table, the
# payload table, a shared result (each output the same either way).
awk 'BEGIN { print "value,pay"; for (i = 0; i < 3000; i++) printf "value-%d,p%d\n", i, i * 7 }' \
    >"$tmp/server.csv"
for keyed in fresh keyed; do
    kargs=()
    [ "$keyed" = keyed ] && kargs=(--key-file "$tmp/server.key")
    if start_server "$tmp/modes-$keyed.srv" --input "$tmp/server.csv" --column value --reveal \
        --association --payload-columns pay --keep-serving "${kargs[@]}"; then
        for mode in rows count-only association payloads; do
            margs=()
            [ "$mode" != rows ] && margs=("--$mode")
            "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 \
                --input "$tmp/client.txt" --output "$tmp/modes-$keyed.$mode" "${margs[@]}" \
                2>"$tmp/modes-$keyed.$mode.cli"
            expect_rc "a round with $mode ($keyed key)" 0 "$?" "$tmp/modes-$keyed.$mode.cli" \
                "$tmp/modes-$keyed.srv"
        done
        kill "$spid" 2>/dev/null
        wait_pid "$spid"
    fi
    if start_server "$tmp/share-$keyed.srv" --input "$tmp/server.csv" --column value --reveal \
        --share-result --output "$tmp/share-$keyed.csv" "${kargs[@]}"; then
        "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 \
            --input "$tmp/client.txt" --output "$tmp/share-$keyed.out" --share-result \
            2>"$tmp/share-$keyed.cli"
        expect_rc "a round with a shared result ($keyed key)" 0 "$?" "$tmp/share-$keyed.cli" \
            "$tmp/share-$keyed.srv"
        wait_pid "$spid"
    fi
done
for mode in rows count-only association payloads; do
    expect_same "$mode: the setup masked at start" "$tmp/modes-keyed.$mode" \
        "$tmp/modes-fresh.$mode"
done
expect_same "a shared result: the setup masked at start" "$tmp/share-keyed.csv" \
    "$tmp/share-fresh.csv"
expect_grep "a shared result: the server's rows" "^value-7,p49" "$tmp/share-keyed.csv"

# A valid request of 50,000 values, then the client closes: the round stops
# at the next chunk of the response.
"$psi" keygen --output "$tmp/client.key" 2>"$tmp/keygen.err" &&
    "$psi" request --key-file "$tmp/client.key" --input "$tmp/server.txt" \
        --output "$tmp/request.bin" 2>"$tmp/request.err"
expect_rc "a request of 50,000 values" 0 "$?" "$tmp/keygen.err" "$tmp/request.err"
# The same past the budget (--memory 1M: the round's steps on disk).
for where in memory disk; do
    margs=()
    [ "$where" = disk ] && margs=(--memory 1M --temp-dir "$tmp")
    start_server "$tmp/gone-$where.srv" --input "$tmp/server.txt" --reveal --keep-serving \
        "${margs[@]}" || continue
    before=$(cpu_ticks "$spid")
    $peer request-close "$port" 50000 "$tmp/request.bin" 2>"$tmp/gone-$where.peer"
    expect_rc "a request, then gone ($where)" 0 "$?" "$tmp/gone-$where.peer"
    wait_rounds "$tmp/gone-$where.srv" 1 &&
        expect_cpu "a request, then gone ($where)" "$before" "$(cpu_ticks "$spid")"
    expect_grep "a request, then gone ($where): the log" \
        "stopped after .* the client closed the connection while the server was masking" \
        "$tmp/gone-$where.srv"
    # A short request is refused by its size there too.
    $peer short-request "$port" 100000 >"$tmp/short-$where.peer" 2>&1
    expect_rc "a short request ($where)" 0 "$?" "$tmp/short-$where.peer"
    expect_fixed "a short request ($where): the client told" \
        "the client's request is 57 bytes, not the 3500002 of the 100000 values" \
        "$tmp/short-$where.peer"
    kill "$spid" 2>/dev/null
    wait_pid "$spid"
done

# A 57-byte request after a HELLO announcing 2*10^7 values: refused by its
# size, under an address space too small for a response of that count
# (not under AddressSanitizer, which reserves terabytes).
if ldd "$psi" 2>/dev/null | grep -q libasan; then
    echo "SKIP: the address space limit (an AddressSanitizer build)"
else
    : >"$tmp/short.srv"
    (ulimit -v 600000 && exec "$psi" server --no-tls --listen 127.0.0.1:0 --timeout 20 \
        --input "$tmp/server.txt" --reveal --memory 8G --threads 1) 2>"$tmp/short.srv" &
    spid=$!
    pids+=("$spid")
    port=
    for _ in $(seq 1 200); do
        port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/short.srv")
        [ -n "$port" ] && break
        sleep 0.05
    done
    $peer short-request "$port" 20000000 >"$tmp/short.peer" 2>&1
    expect_rc "a short request" 0 "$?" "$tmp/short.peer"
    expect_fixed "a short request: the client told" \
        "the client's request is 57 bytes, not the 700000002 of the 20000000 values" \
        "$tmp/short.peer"
    wait_pid "$spid"
    expect_fixed "a short request: the server's log" "is 57 bytes, not the" "$tmp/short.srv"
fi

# A HELLO announcing 10^8 values to a server past its budget, held with
# keepalives: no file of the round's process in its temporary directory
# holds a byte (only the request's, empty, is made before the request).
mkdir -p "$tmp/spill"
if start_server "$tmp/huge.srv" --input "$tmp/server.txt" --reveal --memory 1M \
    --temp-dir "$tmp/spill"; then
    $peer announce-hold "$port" 100000000 8 2>"$tmp/huge.peer" &
    hold=$!
    # The most the round's files held, looked at twice a second.
    most=0
    for _ in $(seq 1 14); do
        sleep 0.5
        bytes=0
        for child in $(cat /proc/"$spid"/task/*/children 2>/dev/null); do
            for fd in /proc/"$child"/fd/*; do
                case $(readlink "$fd" 2>/dev/null) in
                "$tmp/spill/"*) bytes=$((bytes + $(stat -L -c %s "$fd" 2>/dev/null || echo 0)))
                    ;;
                esac
            done
        done
        [ "$bytes" -gt "$most" ] && most=$bytes
    done
    checks=$((checks + 1))
    [ "$most" -eq 0 ] ||
        fail "a HELLO of 10^8 values: the round put $most bytes on its temporary disk"
    wait_pid "$hold"
    expect_rc "a HELLO of 10^8 values held" 0 "$rc" "$tmp/huge.peer"
    wait_pid "$spid"
fi

# A full temporary disk: the client hears that the server failed, the
# server's log says why.
if [ "$(id -u)" -ne 0 ] || ! mkdir -p "$tmp/full" ||
    ! mount -t tmpfs -o size=256k tmpfs "$tmp/full" 2>/dev/null; then
    echo "SKIP: a full temporary disk (needs root to mount a small tmpfs)"
else
    if start_server "$tmp/full.srv" --input "$tmp/server.txt" --reveal --memory 1M \
        --temp-dir "$tmp/full"; then
        "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 \
            --input "$tmp/client.txt" --output "$tmp/full.out" 2>"$tmp/full.cli"
        expect_rc "a full temporary disk" 1 "$?" "$tmp/full.cli"
        wait_pid "$spid"
        expect_fixed "a full temporary disk: the client told" \
            "the server failed this round (see its log)" "$tmp/full.cli"
        checks=$((checks + 1))
        grep -Eq "No space|$tmp/full|bytes" "$tmp/full.cli" &&
            fail "a full temporary disk: the client was told the server's detail" &&
            show "$tmp/full.cli"
        expect_fixed "a full temporary disk: the server's log" "No space left on device" \
            "$tmp/full.srv"
        expect_no_output "a full temporary disk" "$tmp/full.out"
    fi
    umount "$tmp/full"
fi

echo "test_net_commit: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
