#!/usr/bin/env bash
# `shardpsi server` and `shardpsi client` past their memory budget
# (PROTOCOL.md §20): every round of a server and a client that both spill
# gives byte for byte the output of the same round in memory, for each
# setup structure and output mode, the association table included; and the
# faults of a spilled round: a Bloom setup larger than the client's share
# of the budget (a raw one is read in windows, also by a client whose own
# set fits), an unusable temporary directory, an input changed under a
# running server.
# No round leaves a file in its temporary directory or beside its output.
#
# Usage: tests/cli/test_net_spill.sh PSI_BINARY
# Prints one line per failed check and exits 1 if any check failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 PSI_BINARY" >&2
    exit 2
fi
psi=$1
. "$(dirname "$0")/net_common.sh"

# The server: 6,000 values (a raw setup of 210 kB).  The client: 9,000 CSV
# rows with a wide padding column (about 1.3 MB), a third of them the
# server's, one repeated.  The client's --memory 1M (a quarter: 256 kB)
# holds the raw setup and not the input; the server's --memory 128K does
# not hold its input (64 kB) either.
awk 'BEGIN { for (i = 0; i < 6000; i++) print "value-" i }' >"$tmp/server.txt"
awk 'BEGIN {
    pad = sprintf("%0140d", 0);
    print "id,value,pad";
    for (i = 0; i < 9000; i++) printf "%d,value-%d,%s\n", i, (i * 2) + 3000, pad;
    printf "9000,value-3000,%s\n9001,value-5999,%s\n", pad, pad;
}' >"$tmp/client.csv"
mkdir -p "$tmp/spill-srv" "$tmp/spill-cli" "$tmp/out"
budget=1M
sbudget=128K

# round NAME SERVER_ARGS -- CLIENT_ARGS: a round with a fresh server;
# writes $tmp/out/NAME.txt; sets rc.
round() {
    local name=$1
    shift
    local sargs=()
    while [ "$1" != -- ]; do sargs+=("$1"); shift; done
    shift
    # The same keys in every round: a GCS or Bloom false positive is then
    # the same in memory and past the budget, not a difference.
    start_server "$tmp/$name.srv" --input "$tmp/server.txt" --reveal \
        --key-file "$tmp/server.key" "${sargs[@]}" || return
    "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 --column value \
        --input "$tmp/client.csv" --output "$tmp/out/$name.txt" \
        --key-file "$tmp/client.key" "$@" 2>"$tmp/$name.cli"
    rc=$?
    wait_pid "$spid"
}

# The same round in memory and past the budget on both sides.
for st in raw gcs bloom; do
    modes=("" --indices --count-only)
    [ "$st" = raw ] && modes+=(--association)
    for m in "${modes[@]}"; do
        name="$st${m:-rows}"
        assoc=()
        [ "$m" = --association ] && assoc=(--association)
        cmem=(--memory "$budget")
        round "mem-$name" --structure "$st" --fpr 1e-6 "${assoc[@]}" -- ${m:+"$m"}
        expect_rc "in memory: $name" 0 "$rc" "$tmp/mem-$name.cli" "$tmp/mem-$name.srv" ||
            continue
        round "sp-$name" --structure "$st" --fpr 1e-6 "${assoc[@]}" --memory "$sbudget" \
            --temp-dir "$tmp/spill-srv" -- ${m:+"$m"} "${cmem[@]}" \
            --temp-dir "$tmp/spill-cli"
        expect_rc "past the budget: $name" 0 "$rc" "$tmp/sp-$name.cli" "$tmp/sp-$name.srv" ||
            continue
        expect_same "past the budget: $name" "$tmp/out/sp-$name.txt" "$tmp/out/mem-$name.txt"
        # Both sides took the spilled path: their steps' notes say so.
        expect_fixed "$name: the client spilled" "matched from runs on disk" \
            "$tmp/sp-$name.cli"
        expect_fixed "$name: the server spilled" "runs on disk" "$tmp/sp-$name.srv"
    done
done
# A raw setup matches each of its elements once (PROTOCOL.md §9.1): the
# repeated value-3000 once, so 1,501 rows and the header.
expect_grep "the rows hold the header and the matches" "^9001,value-5999," \
    "$tmp/out/sp-rawrows.txt"
checks=$((checks + 1))
[ "$(wc -l <"$tmp/out/sp-rawrows.txt")" = 1502 ] ||
    fail "rows: $(wc -l <"$tmp/out/sp-rawrows.txt") lines, expected 1502"
checks=$((checks + 1))
left=$(find "$tmp/spill-srv" "$tmp/spill-cli" -mindepth 1)
[ -z "$left" ] || fail "files left in a temporary directory: $left"
checks=$((checks + 1))
[ -z "$(ls "$tmp/out" | grep -v '\.txt$')" ] ||
    fail "files left beside the outputs: $(ls "$tmp/out")"

# A server whose own set fits its budget (6,000 values in 2M) but whose
# client's announced 9,002 values would not: that round spills.
round sp-client-big --memory 2M --temp-dir "$tmp/spill-srv" --
expect_rc "a client past the server's budget" 0 "$rc" "$tmp/sp-client-big.cli" \
    "$tmp/sp-client-big.srv" &&
    expect_same "a client past the server's budget" "$tmp/out/sp-client-big.txt" \
        "$tmp/out/mem-rawrows.txt"
expect_fixed "a client past the server's budget: the round spilled" "runs on disk" \
    "$tmp/sp-client-big.srv"
expect_grep "a client past the server's budget: its own set in memory" \
    "listening on .* with 6000 values" "$tmp/sp-client-big.srv"

# A prebuilt raw setup (server --setup): sent from its file, and a client
# whose request would not fit the server's 128K answered through the
# response step; the same rows, and the same association table with the
# setup's --permutation.
"$psi" setup --key-file "$tmp/server.key" --input "$tmp/server.txt" --structure raw \
    --permutation "$tmp/pre.perm" --output "$tmp/pre.setup" --no-progress 2>/dev/null
for m in rows --association; do
    popt=()
    [ "$m" = --association ] && popt=(--reveal --association --permutation "$tmp/pre.perm")
    [ "$m" = rows ] && popt=(--reveal)
    start_server "$tmp/pre-$m.srv" --setup "$tmp/pre.setup" --key-file "$tmp/server.key" \
        --memory "$sbudget" --temp-dir "$tmp/spill-srv" "${popt[@]}" || continue
    copt=()
    [ "$m" = --association ] && copt=(--association)
    "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 --column value \
        --input "$tmp/client.csv" --output "$tmp/out/pre$m.txt" --key-file "$tmp/client.key" \
        "${copt[@]}" 2>"$tmp/pre-$m.cli"
    expect_rc "a prebuilt setup past the server's budget ($m)" 0 "$?" "$tmp/pre-$m.cli"
    wait_pid "$spid"
    want=mem-rawrows
    [ "$m" = --association ] && want=mem-raw--association
    expect_same "a prebuilt setup past the server's budget ($m)" "$tmp/out/pre$m.txt" \
        "$tmp/out/$want.txt"
    expect_fixed "a prebuilt setup ($m): the response spilled" "runs on disk" \
        "$tmp/pre-$m.srv"
done
checks=$((checks + 1))
left=$(find "$tmp/spill-srv" -mindepth 1)
[ -z "$left" ] || fail "a prebuilt setup: files left: $left"

# A raw setup larger than a quarter of the client's budget (210 kB at
# 512K) is read in windows from its file: the same rows.  A Bloom setup is
# held whole: one past the quarter is refused with the budget it needs,
# the server told.
round setup-big -- --memory 512K --temp-dir "$tmp/spill-cli"
expect_rc "a raw setup past the client's share" 0 "$rc" "$tmp/setup-big.cli" &&
    expect_same "a raw setup past the client's share" "$tmp/out/setup-big.txt" \
        "$tmp/out/mem-rawrows.txt"
round bloom-big --structure bloom --fpr 1e-9 -- --memory 128K --temp-dir "$tmp/spill-cli"
expect_rc "a Bloom setup past the client's share" 1 "$rc" "$tmp/bloom-big.cli"
expect_fixed "a Bloom setup past the client's share" \
    "the server's bloom setup of 69871 bytes does not fit --memory 131072" "$tmp/bloom-big.cli"
expect_fixed "a Bloom setup past the client's share: the size needed" \
    "raise --memory to at least 279484" "$tmp/bloom-big.cli"
expect_fixed "a Bloom setup past the client's share: the server told" "raise --memory" \
    "$tmp/bloom-big.srv"
expect_no_output "a Bloom setup past the client's share" "$tmp/out/bloom-big.txt"

# A client whose own 300 rows fit its budget but whose server's raw setup
# (210 kB) is past a quarter of it: it learns the size at the handshake and
# runs the round through the steps, the setup read in windows.
# The same with --association: the permutation too is read from its file.
head -301 "$tmp/client.csv" >"$tmp/client-small.csv"
for m in rows --association; do
    for how in mem late; do
        cmem=()
        [ $how = late ] && cmem=(--memory 512K --temp-dir "$tmp/spill-cli")
        aopt=()
        [ $m = --association ] && aopt=(--association)
        start_server "$tmp/small-$how.srv" --input "$tmp/server.txt" --reveal "${aopt[@]}" ||
            continue
        "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 --column value \
            --input "$tmp/client-small.csv" --output "$tmp/out/small-$how$m.txt" "${cmem[@]}" \
            "${aopt[@]}" 2>"$tmp/small-$how.cli"
        expect_rc "a small client, big raw setup ($how$m)" 0 "$?" "$tmp/small-$how.cli"
        wait_pid "$spid"
    done
    expect_same "a small client, big raw setup: the same output ($m)" \
        "$tmp/out/small-late$m.txt" "$tmp/out/small-mem$m.txt"
    expect_fixed "a small client, big raw setup: matched in windows ($m)" \
        "it is matched from a temporary file, in windows" "$tmp/small-late.cli"
done
checks=$((checks + 1))
[ "$(wc -l <"$tmp/out/small-late--association.txt")" -gt 40 ] ||
    fail "a small client, big raw setup: too few pairs to show anything"
checks=$((checks + 1))
left=$(find "$tmp/spill-cli" -mindepth 1)
[ -z "$left" ] || fail "a small client, big raw setup: files left: $left"

# A temporary directory that does not exist: both sides say which.
round no-dir -- --memory "$budget" --temp-dir "$tmp/nowhere"
expect_rc "a missing client temp dir" 1 "$rc" "$tmp/no-dir.cli"
expect_fixed "a missing client temp dir" "temporary directory $tmp/nowhere: cannot create" \
    "$tmp/no-dir.cli"
expect_no_output "a missing client temp dir" "$tmp/out/no-dir.txt"
round no-dir-srv --memory "$sbudget" --temp-dir "$tmp/nowhere" -- --memory "$budget"
expect_rc "a missing server temp dir" 1 "$rc" "$tmp/no-dir-srv.cli"
# The client hears only that the server failed; its log has the detail.
expect_fixed "a missing server temp dir: the client told" \
    "the server failed this round (see its log)" "$tmp/no-dir-srv.cli"
expect_fixed "a missing server temp dir: the server's log" \
    "temporary directory $tmp/nowhere: cannot create" "$tmp/no-dir-srv.srv"
checks=$((checks + 1))
grep -Fq "$tmp/nowhere" "$tmp/no-dir-srv.cli" &&
    fail "a missing server temp dir: the client was told the server's temporary path"
expect_no_output "a missing server temp dir" "$tmp/out/no-dir-srv.txt"

# The input grows under a spilled server: the round is refused, not answered
# with a setup of another size.
cp "$tmp/server.txt" "$tmp/growing.txt"
start_server "$tmp/grow.srv" --input "$tmp/growing.txt" --reveal --memory "$sbudget" &&
{
    echo "value-new" >>"$tmp/growing.txt"
    "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 --column value \
        --input "$tmp/client.csv" --output "$tmp/out/grow.txt" 2>"$tmp/grow.cli"
    expect_rc "an input changed under the server" 1 "$?" "$tmp/grow.cli"
    expect_fixed "an input changed under the server: the client told" \
        "the server failed this round (see its log)" "$tmp/grow.cli"
    wait_pid "$spid"
    expect_fixed "an input changed under the server: the server's log" \
        "holds 6001 values now, not the 6000 it held when the server started" "$tmp/grow.srv"
    checks=$((checks + 1))
    grep -Fq "growing.txt" "$tmp/grow.cli" &&
        fail "an input changed under the server: the client was told the input's name"
    expect_no_output "an input changed under the server" "$tmp/out/grow.txt"
}

# Interrupted in the middle of a spilled round (SIGTERM: a background job
# of a script ignores SIGINT): the client dies of the signal, with no
# output and nothing in its temporary directory.
awk 'BEGIN { pad = sprintf("%0140d", 0); print "id,value,pad";
             for (i = 0; i < 200000; i++) printf "%d,value-%d,%s\n", i, i, pad }' \
    >"$tmp/big.csv"
start_server "$tmp/int.srv" --input "$tmp/server.txt" --reveal &&
{
    "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 --column value \
        --input "$tmp/big.csv" --output "$tmp/out/int.txt" --memory "$budget" \
        --temp-dir "$tmp/spill-cli" 2>"$tmp/int.cli" &
    cpid=$!
    # Killed once its round has begun (its first line), well before its
    # end: 200,000 values take seconds even on a fast machine.
    for _ in $(seq 1 100); do
        grep -q "a request of" "$tmp/int.cli" 2>/dev/null && break
        sleep 0.05
    done
    sleep 0.2
    kill -TERM "$cpid"
    wait_pid "$cpid"
    expect_rc "interrupted: the client dies of SIGTERM" 143 "$rc" "$tmp/int.cli"
    expect_no_output "interrupted" "$tmp/out/int.txt"
    checks=$((checks + 1))
    left=$(find "$tmp/spill-cli" -mindepth 1)
    [ -z "$left" ] || fail "interrupted: files left in the temporary directory: $left"
    wait_pid "$spid"
}

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
