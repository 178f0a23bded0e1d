#!/usr/bin/env bash
# Tests of the offline commands `shardpsi keygen|setup|request|response|match`
# (PROTOCOL.md §17): in each suite, rounds through message files for the
# raw and gcs setups (and bloom once), with the intersection revealed (rows
# and --indices) and count-only, checked against a plain comparison of the
# inputs (awk, as test_net.sh); the message files are the same bytes
# on one thread and on 2 threads with 5 shards (with fixed keys, every
# message is a function of the key and the values alone); and the faults:
# missing files, a key file others can read or of another suite, malformed
# or other-suite messages, a reveal mismatch, a response to another input,
# each with a clear message, a non-zero exit and no output file left.
#
# Usage: tests/cli/test_offline.sh PSI_BINARY
# Prints one line per failed check and exits 1 if any check failed.
set -u

. "$(dirname "$0")/offline_common.sh"

# expect_no_output WHAT FILE: neither FILE nor a temporary file beside it.
expect_no_output() {
    checks=$((checks + 1))
    if [ -e "$2" ] || ls "$2".tmp.* >/dev/null 2>&1; then
        fail "$1: an output file was left: $(ls "$2"* 2>/dev/null | tr '\n' ' ')"
    fi
}

# The inputs of test_net.sh: overlapping sets with duplicates on both
# sides, a value with a comma and one with a quote, CRLF on the client.
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
n_server=$(wc -l <"$tmp/server.txt" | tr -d ' ')
n_client=$(wc -l <"$tmp/client.txt" | tr -d ' ')

# Expected results (PROTOCOL.md §9.5): raw pairs copies one to one, gcs and
# bloom test membership.
awk 'NR == FNR { s[$0]++; next } { sub(/\r$/, ""); c[$0]++ }
     c[$0] <= s[$0] { print FNR - 1 }' "$tmp/server.txt" "$tmp/client.txt" >"$tmp/want.raw.idx"
awk 'NR == FNR { s[$0]++; next } { sub(/\r$/, "") } ($0 in s) { print FNR - 1 }' \
    "$tmp/server.txt" "$tmp/client.txt" >"$tmp/want.member.idx"
for k in raw member; do
    awk 'NR == FNR { w[$1 + 1] = 1; next } (FNR in w) { sub(/\r$/, ""); print }' \
        "$tmp/want.$k.idx" "$tmp/client.txt" >"$tmp/want.$k.rows"
    wc -l <"$tmp/want.$k.idx" | tr -d ' ' >"$tmp/want.$k.count"
done

# fixed_key FILE SUITE DIGIT: a key file of a fixed valid key (a byte
# repeated; for ristretto255, little-endian, a small last byte).
fixed_key() {
    local hex
    if [ "$2" = ristretto255 ]; then
        hex=$(printf "$3$3%.0s" $(seq 1 31))0$3
    else
        hex=$(printf "$3$3%.0s" $(seq 1 32))
    fi
    if [ "$2" = openmined-p256 ]; then echo "$hex"; else echo "$hex $2"; fi >"$1"
    chmod 600 "$1"
}

# The help lists the commands.
"$psi" --help >"$tmp/help.txt" 2>&1
for c in keygen setup request response match; do
    expect_grep "shardpsi --help lists $c" "^  $c " "$tmp/help.txt"
    run "psi $c --help" 0 "$tmp/h.err" "$c" --help
done

# Threads layouts whose bytes must agree.
layouts=("--threads 1" "--threads 2 --shards 5")

for su in openmined-p256 p256-sswu ristretto255; do
    d=$tmp/$su
    mkdir -p "$d"
    S=(--suite "$su")
    # keygen: mode 0600, the suite recorded, a round works with the keys.
    run "$su keygen server" 0 "$d/kg.err" keygen --output "$d/gen.sk" "${S[@]}"
    run "$su keygen client" 0 "$d/kg.err" keygen --output "$d/gen.ck" "${S[@]}"
    for k in "$d/gen.sk" "$d/gen.ck"; do
        checks=$((checks + 1))
        [ "$(stat -c %a "$k")" = 600 ] || fail "$su keygen: $k has mode $(stat -c %a "$k")"
    done
    if [ "$su" != openmined-p256 ]; then expect_grep "$su keygen: suite" " $su" "$d/gen.sk"; fi
    fixed_key "$d/sk" "$su" 1
    fixed_key "$d/ck" "$su" 2

    structs=(raw gcs)
    [ "$su" = openmined-p256 ] && structs+=(bloom_filter)
    for st in "${structs[@]}"; do
        k=member
        extra=(--num-client-inputs "$n_client")
        if [ "$st" = raw ]; then k=raw; extra=(--permutation PERM); fi
        for li in 0 1; do
            # shellcheck disable=SC2206
            T=(${layouts[$li]})
            p=$d/$st.$li
            ex=("${extra[@]/PERM/$p.perm}")
            run "$su $st setup ($li)" 0 "$p.err" setup --key-file "$d/sk" "${S[@]}" "${T[@]}" \
                --input "$tmp/server.txt" --structure "$st" "${ex[@]}" --output "$p.setup" ||
                continue
            run "$su $st request ($li)" 0 "$p.err" request --key-file "$d/ck" "${S[@]}" \
                "${T[@]}" --input "$tmp/client.txt" --output "$p.req"
            run "$su $st count request ($li)" 0 "$p.err" request --key-file "$d/ck" "${S[@]}" \
                "${T[@]}" --input "$tmp/client.txt" --count-only --output "$p.creq"
            run "$su $st response ($li)" 0 "$p.err" response --key-file "$d/sk" "${S[@]}" \
                "${T[@]}" --request "$p.req" --reveal --output "$p.resp"
            run "$su $st count response ($li)" 0 "$p.err" response --key-file "$d/sk" \
                "${S[@]}" "${T[@]}" --request "$p.creq" --output "$p.cresp"
            for m in rows indices count; do
                mo=()
                r=$p.resp
                [ "$m" = indices ] && mo=(--indices)
                [ "$m" = count ] && mo=(--count-only) && r=$p.cresp
                run "$su $st match $m ($li)" 0 "$p.err" match --key-file "$d/ck" "${S[@]}" \
                    "${T[@]}" --input "$tmp/client.txt" --setup "$p.setup" --response "$r" \
                    "${mo[@]}" --output "$p.$m" || continue
                w=$tmp/want.$k.$m
                [ "$m" = indices ] && w=$tmp/want.$k.idx
                expect_same "$su $st match $m ($li) against the plain comparison" "$p.$m" "$w"
            done
        done
        # The same bytes on one thread and on 2 threads with 5 shards.
        for f in setup req creq resp cresp; do
            expect_same "$su $st $f: --threads 1 vs --threads 2 --shards 5" \
                "$d/$st.0.$f" "$d/$st.1.$f"
        done
        if [ "$st" = raw ]; then
            expect_same "$su raw permutation: layouts" "$d/raw.0.perm" "$d/raw.1.perm"
            checks=$((checks + 1))
            sort -n "$d/raw.0.perm" | cmp -s - <(seq 0 $((n_server - 1))) ||
                fail "$su raw permutation: not a permutation of 0..$((n_server - 1))"
        fi
    done

    # A round with the keygen keys, and the CSV input: the request of the
    # CSV column is the same bytes as the plain file's.
    run "$su gen setup" 0 "$d/g.err" setup --key-file "$d/gen.sk" "${S[@]}" \
        --input "$tmp/server.txt" --structure raw --output "$d/g.setup"
    run "$su gen request csv" 0 "$d/g.err" request --key-file "$d/gen.ck" "${S[@]}" \
        --input "$tmp/client.csv" --column name --output "$d/g.req"
    run "$su gen request plain" 0 "$d/g.err" request --key-file "$d/gen.ck" "${S[@]}" \
        --input "$tmp/client.txt" --output "$d/g.req2"
    expect_same "$su request: CSV column vs plain" "$d/g.req" "$d/g.req2"
    run "$su gen response" 0 "$d/g.err" response --key-file "$d/gen.sk" "${S[@]}" \
        --request "$d/g.req" --reveal --output "$d/g.resp"
    run "$su gen match csv" 0 "$d/g.err" match --key-file "$d/gen.ck" "${S[@]}" \
        --input "$tmp/client.csv" --column name --setup "$d/g.setup" --response "$d/g.resp" \
        --indices --output "$d/g.idx" &&
        expect_same "$su gen match csv --indices" "$d/g.idx" "$tmp/want.raw.idx"
    run "$su gen match csv rows" 0 "$d/g.err" match --key-file "$d/gen.ck" "${S[@]}" \
        --input "$tmp/client.csv" --column name --setup "$d/g.setup" --response "$d/g.resp" \
        --output "$d/g.rows" && {
        checks=$((checks + 1))
        head -1 "$d/g.rows" | grep -q '^id,name,note$' || fail "$su csv rows: no header"
        [ $(($(wc -l <"$d/g.rows") - 1)) -eq "$(cat "$tmp/want.raw.count")" ] ||
            fail "$su csv rows: $(wc -l <"$d/g.rows") lines"
    }
done

# ---------------------------------------------------------------- faults
d=$tmp/openmined-p256
f=$tmp/faults
mkdir -p "$f"
K=(--key-file "$d/sk")
C=(--key-file "$d/ck")

# fault WHAT RC PATTERN OUTPUT CMD...: fails with RC, says PATTERN, leaves
# no OUTPUT.
fault() {
    local what=$1 rc=$2 pat=$3 out=$4
    shift 4
    run "$what" "$rc" "$f/err" "$@" && expect_grep "$what: message" "$pat" "$f/err"
    expect_no_output "$what" "$out"
}

fault "missing input" 2 "nothere.txt" "$f/o1" setup "${K[@]}" --input "$f/nothere.txt" \
    --structure raw --output "$f/o1"
fault "missing key file" 2 "does not exist" "$f/o2" request --key-file "$f/nokey" \
    --input "$tmp/client.txt" --output "$f/o2"
expect_no_output "missing key file: not created" "$f/nokey"
cp "$d/sk" "$f/open.key"
chmod 644 "$f/open.key"
fault "key file readable by others" 2 "accessible to others" "$f/o3" setup \
    --key-file "$f/open.key" --input "$tmp/server.txt" --structure raw --output "$f/o3"
# A FIFO at the key's path is refused at once (the wrapper's timeout fails
# a command that waits for a writer), and so is a key file of another user
# (root alone can make one, so only root runs that case).
mkfifo "$f/fifo.key"
printf '#!/bin/sh\nexec timeout 20 "%s" "$@"\n' "$psi" >"$f/bounded"
chmod 755 "$f/bounded"
psi_saved=$psi psi=$f/bounded
fault "key file that is a FIFO" 2 "not a regular file" "$f/o3f" setup \
    --key-file "$f/fifo.key" --input "$tmp/server.txt" --structure raw --output "$f/o3f"
psi=$psi_saved
if [ "$(id -u)" -eq 0 ]; then
    cp "$d/sk" "$f/theirs.key"
    chmod 600 "$f/theirs.key"
    chown 65534 "$f/theirs.key"
    fault "key file of another user" 2 "belongs to user 65534" "$f/o3o" setup \
        --key-file "$f/theirs.key" --input "$tmp/server.txt" --structure raw \
        --output "$f/o3o"
fi
fault "key file of another suite" 2 "suite ristretto255" "$f/o4" request \
    --key-file "$tmp/ristretto255/ck" --input "$tmp/client.txt" --output "$f/o4"
fault "missing request" 2 "cannot open" "$f/o5" response "${K[@]}" --request "$f/none" \
    --reveal --output "$f/o5"
fault "missing setup" 2 "cannot open" "$f/o6" match "${C[@]}" --input "$tmp/client.txt" \
    --setup "$f/none" --response "$d/raw.0.resp" --output "$f/o6"
head -c 100 "$d/raw.0.req" >"$f/short.req"
fault "truncated request" 1 "PSI_E_MSG_TRUNCATED" "$f/o7" response "${K[@]}" \
    --request "$f/short.req" --reveal --output "$f/o7"
fault "request of another suite" 1 "not a message of suite openmined-p256" "$f/o8" \
    response "${K[@]}" --request "$tmp/ristretto255/raw.0.req" --reveal --output "$f/o8"
printf 'not a setup' >"$f/bad.setup"
fault "malformed setup" 1 "ServerSetup" "$f/o9" match "${C[@]}" --input "$tmp/client.txt" \
    --setup "$f/bad.setup" --response "$d/raw.0.resp" --output "$f/o9"
fault "setup of another suite" 1 "not a message of suite" "$f/o10" match "${C[@]}" \
    --input "$tmp/client.txt" --setup "$tmp/p256-sswu/raw.0.setup" \
    --response "$d/raw.0.resp" --output "$f/o10"
fault "reveal request without --reveal" 1 "answer it with --reveal" "$f/o11" response \
    "${K[@]}" --request "$d/raw.0.req" --output "$f/o11"
fault "count-only request with --reveal" 1 "answer it without --reveal" "$f/o12" response \
    "${K[@]}" --request "$d/raw.0.creq" --reveal --output "$f/o12"
fault "response to another input" 1 "does not answer a request" "$f/o13" match "${C[@]}" \
    --input "$tmp/server.txt" --setup "$d/raw.0.setup" --response "$d/raw.0.resp" \
    --output "$f/o13"
fault "output directory missing" 2 "nodir" "$f/nodir/o14" request "${C[@]}" \
    --input "$tmp/client.txt" --output "$f/nodir/o14"
fault "gcs without --num-client-inputs" 2 "num-client-inputs" "$f/o15" setup "${K[@]}" \
    --input "$tmp/server.txt" --structure gcs --output "$f/o15"
fault "--permutation with gcs" 2 "raw setup only" "$f/o16" setup "${K[@]}" \
    --input "$tmp/server.txt" --structure gcs --num-client-inputs 5 --permutation "$f/p16" \
    --output "$f/o16"
expect_no_output "--permutation with gcs: permutation" "$f/p16"
fault "bad structure" 2 "not raw, gcs or bloom_filter" "$f/o17" setup "${K[@]}" \
    --input "$tmp/server.txt" --structure cuckoo --output "$f/o17"
cp "$d/sk" "$f/exists.key"
fault "keygen over an existing file" 2 "not overwritten" "$f/nothing" keygen \
    --output "$f/exists.key"
expect_same "keygen over an existing file: untouched" "$f/exists.key" "$d/sk"
fault "unknown suite" 2 "suite" "$f/o18" keygen --output "$f/o18" --suite p384

# The CSV guard (app/app_input.h): an input that looks like CSV (a ',' in
# its first line, or a name ending in .csv) is refused as lines with exit 2,
# a message naming the file and both options, and no output; --lines reads
# it as lines, --column as CSV; a plain list needs neither.
guard="looks like CSV (first line \"id,name,note\"); add --column NAME to read a column, or --lines to read every line as a value"
cp "$tmp/client.csv" "$f/leads.txt"
printf 'name\r\nvalue-200\r\nvalue-5\r\n' >"$f/one.CSV"
run "guard: request of a .csv" 2 "$f/err" request "${C[@]}" --input "$tmp/client.csv" \
    --output "$f/g1" && {
    checks=$((checks + 1))
    grep -qxF "shardpsi request: error: $tmp/client.csv: $guard" "$f/err" ||
        fail "guard: request of a .csv: message: $(head -c 400 "$f/err")"
}
expect_no_output "guard: request of a .csv" "$f/g1"
fault "guard: setup of a header line in a .txt" 2 "leads.txt: $guard" "$f/g2" setup \
    "${K[@]}" --input "$f/leads.txt" --structure raw --output "$f/g2"
fault "guard: match of a .csv" 2 "client.csv: $guard" "$f/g3" match "${C[@]}" \
    --input "$tmp/client.csv" --setup "$d/raw.0.setup" --response "$d/raw.0.resp" \
    --output "$f/g3"
fault "guard: a .csv name without a comma" 2 "one.CSV: looks like CSV (its name ends in .csv); add --column NAME" \
    "$f/g4" request "${C[@]}" --input "$f/one.CSV" --output "$f/g4"
"$psi" request "${C[@]}" --input - --output "$f/g5" <"$tmp/client.csv" 2>"$f/err" >/dev/null
rc=$?
checks=$((checks + 1))
[ "$rc" -eq 2 ] || fail "guard: request from stdin: exit status $rc, expected 2"
expect_grep "guard: request from stdin: message" "error: stdin: $guard" "$f/err"
expect_no_output "guard: request from stdin" "$f/g5"
both="give --column NAME (read a CSV column) or --lines (read every line as a value), not both"
fault "guard: setup --lines --column" 2 "setup: $both" "$f/g6" setup "${K[@]}" \
    --input "$tmp/client.csv" --lines --column name --structure raw --output "$f/g6"
fault "guard: request --column --lines" 2 "request: $both" "$f/g7" request "${C[@]}" \
    --input "$tmp/client.csv" --column name --lines --output "$f/g7"
fault "guard: match --lines --column" 2 "match: $both" "$f/g8" match "${C[@]}" \
    --input "$tmp/client.csv" --lines --column name --setup "$d/raw.0.setup" \
    --response "$d/raw.0.resp" --output "$f/g8"
# --column still reads the .csv (above, with the keygen keys); the plain
# lists (a comma only in later lines) need no flag (above).  --lines reads
# both files as lines, the header too: the setup of the .txt and the
# request of the .csv hold the same lines, so every client row matches.
run "guard: setup --lines" 0 "$f/err" setup "${K[@]}" --input "$f/leads.txt" --lines \
    --structure raw --output "$f/l.setup" &&
run "guard: request --lines" 0 "$f/err" request "${C[@]}" --input "$tmp/client.csv" \
    --lines --output "$f/l.req" &&
run "guard: response" 0 "$f/err" response "${K[@]}" --request "$f/l.req" --reveal \
    --output "$f/l.resp" &&
run "guard: match --lines" 0 "$f/err" match "${C[@]}" --input "$tmp/client.csv" --lines \
    --setup "$f/l.setup" --response "$f/l.resp" --indices --output "$f/l.idx" &&
    expect_same "guard: --lines reads every line" "$f/l.idx" \
        <(seq 0 $(($(wc -l <"$tmp/client.csv") - 1)))
run "guard: request --lines of a .csv name" 0 "$f/err" request "${C[@]}" \
    --input "$f/one.CSV" --lines --output "$f/l2.req"

# The key never appears in an output, a message or a log (key files
# end in k or .key).
for su in openmined-p256 p256-sswu ristretto255; do
    for key in "$tmp/$su/sk" "$tmp/$su/ck" "$tmp/$su/gen.sk" "$tmp/$su/gen.ck"; do
        hex=$(cut -c1-64 "$key")
        checks=$((checks + 1))
        leaks=$(grep -rl --exclude='*k' --exclude='*.key' -e "$hex" "$tmp" 2>/dev/null)
        [ -z "$leaks" ] || fail "key $key found in $leaks"
    done
done

echo "test_offline: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
