#!/usr/bin/env bash
# Private join through the offline commands (PROTOCOL.md §22): `shardpsi
# payloads` beside a setup and `shardpsi match --payloads`, checked against a
# plain inner join of the two CSV files computed here (python3's csv module),
# for raw and GCS setups in every suite, a line-mode client (tab-separated),
# and the faults: a damaged table, another server's table, a duplicate value,
# an unknown column, a payload past --pad-to, --payloads with --indices.
#   test_payloads.sh PSI_BINARY
# shellcheck source=offline_common.sh
. "$(dirname "$0")/offline_common.sh"
command -v python3 >/dev/null || { echo "test_payloads: python3 is needed"; exit 77; }
d=$tmp

# shellcheck source=payload_common.sh
. "$(dirname "$0")/payload_common.sh"
payload_inputs 600 1600

# expect_no_output WHAT FILE: a failed command left no output file.
expect_no_output() {
    checks=$((checks + 1))
    [ ! -e "$2" ] || fail "$1: $2 was left behind"
}

payload_join "$d/client.csv" "$d/server.csv" email region,segment "$d/want.csv"
payload_join "$d/client.txt" "$d/server.csv" email segment,id,region "$d/want.tsv" lines
[ "$(wc -l <"$d/want.csv")" -gt 150 ] || fail "the plain join is too small"

for suite in openmined-p256 p256-sswu ristretto255; do
    S=(--key-file "$d/sk.$suite" --suite "$suite") C=(--key-file "$d/ck.$suite" --suite "$suite")
    run "$suite: keygen" 0 "$d/err" keygen --suite "$suite" --output "$d/sk.$suite"
    run "$suite: keygen" 0 "$d/err" keygen --suite "$suite" --output "$d/ck.$suite"
    run "$suite: raw setup" 0 "$d/err" setup "${S[@]}" --input "$d/server.csv" --column email \
        --structure raw --output "$d/setup.$suite"
    run "$suite: gcs setup" 0 "$d/err" setup "${S[@]}" --input "$d/server.csv" --column email \
        --structure gcs --num-client-inputs 600 --output "$d/gsetup.$suite"
    run "$suite: payloads" 0 "$d/err" payloads "${S[@]}" --input "$d/server.csv" \
        --column email --payload-columns region,segment --output "$d/pay.$suite"
    run "$suite: request" 0 "$d/err" request "${C[@]}" --input "$d/client.csv" --column email \
        --output "$d/req.$suite"
    run "$suite: response" 0 "$d/err" response "${S[@]}" --request "$d/req.$suite" --reveal \
        --output "$d/resp.$suite"
    # Past --memory (PROTOCOL.md §22.4): the same bytes as in memory, for one salt.
    salt=$(printf '%064x' 2026)
    run "$suite: payloads --salt" 0 "$d/err" payloads "${S[@]}" --input "$d/server.csv" \
        --column email --payload-columns region,segment --salt "$salt" --output "$d/paym.$suite"
    run "$suite: payloads --salt --memory 16K" 0 "$d/err" payloads "${S[@]}" \
        --input "$d/server.csv" --column email --payload-columns region,segment --salt "$salt" \
        --memory 16K --output "$d/pays.$suite" &&
        expect_grep "$suite: built past the budget" "built within --memory 16384" "$d/err"
    expect_same "$suite: the payload file past --memory vs in memory" "$d/pays.$suite" \
        "$d/paym.$suite"
    for st in setup gsetup; do
        run "$suite: match $st --payloads" 0 "$d/err" match "${C[@]}" --input "$d/client.csv" \
            --column email --setup "$d/$st.$suite" --response "$d/resp.$suite" \
            --payloads "$d/pay.$suite" --output "$d/got.$st.$suite.csv" &&
            same_csv "$suite: match $st --payloads vs the plain join" "$d/got.$st.$suite.csv" \
                "$d/want.csv"
        # Past --memory: the rows written a chunk at a time, the response
        # decoded again beside them, the table looked up where it lies.
        run "$suite: match $st --payloads --memory 64K" 0 "$d/err" match "${C[@]}" \
            --input "$d/client.csv" --column email --setup "$d/$st.$suite" \
            --response "$d/resp.$suite" --payloads "$d/pays.$suite" --memory 64K \
            --output "$d/gotm.$st.$suite.csv" &&
            expect_grep "$suite: match $st --payloads --memory 64K: from runs" \
                "matched from runs on disk" "$d/err" &&
            same_csv "$suite: match $st --payloads --memory 64K vs the plain join" \
                "$d/gotm.$st.$suite.csv" "$d/want.csv"
    done
done

# A line-mode client: the value and the server's columns, tab-separated.
S=(--key-file "$d/sk.ristretto255" --suite ristretto255)
C=(--key-file "$d/ck.ristretto255" --suite ristretto255)
run "lines: payloads" 0 "$d/err" payloads "${S[@]}" --input "$d/server.csv" --column email \
    --payload-columns segment,id,region --pad-to 64 --output "$d/pay.tsv"
run "lines: request" 0 "$d/err" request "${C[@]}" --input "$d/client.txt" --output "$d/req.tsv"
run "lines: response" 0 "$d/err" response "${S[@]}" --request "$d/req.tsv" --reveal \
    --output "$d/resp.tsv"
run "lines: match --payloads" 0 "$d/err" match "${C[@]}" --input "$d/client.txt" \
    --setup "$d/setup.ristretto255" --response "$d/resp.tsv" --payloads "$d/pay.tsv" \
    --output "$d/got.tsv" && expect_same "lines: match --payloads vs the plain join" \
    "$d/got.tsv" "$d/want.tsv"

# Faults.  Every record's ciphertext damaged: the first matched row's fails.
M=(match --key-file "$d/ck.openmined-p256" --input "$d/client.csv" --column email
    --setup "$d/setup.openmined-p256" --response "$d/resp.openmined-p256")
python3 - "$d/pay.openmined-p256" "$d/pay.bad" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
t = b.index(b'\n') + 1
L = int.from_bytes(b[t + 12:t + 16], 'little')
n = int.from_bytes(b[t + 16:t + 24], 'little')
for j in range(n):
    b[t + 56 + j * (36 + L) + 20] ^= 1
open(sys.argv[2], 'wb').write(b)
EOF
run "a damaged table" 1 "$d/err" "${M[@]}" --payloads "$d/pay.bad" --output "$d/o1" &&
    expect_grep "a damaged table: message" "does not decrypt.*PSI_E_PAYLOAD_AUTH" "$d/err"
expect_no_output "a damaged table" "$d/o1"
head -c 2000 "$d/pay.openmined-p256" >"$d/pay.cut"
run "a damaged table past --memory" 1 "$d/err" "${M[@]}" --payloads "$d/pay.bad" \
    --memory 4K --output "$d/o1m" &&
    expect_grep "a damaged table past --memory: message" "does not decrypt.*PSI_E_PAYLOAD_AUTH" \
        "$d/err"
expect_no_output "a damaged table past --memory" "$d/o1m"
run "a truncated table" 1 "$d/err" "${M[@]}" --payloads "$d/pay.cut" --output "$d/o2" &&
    expect_grep "a truncated table: message" "truncated or extra record" "$d/err"
run "another server's table" 1 "$d/err" "${M[@]}" --payloads "$d/pay.p256-sswu" --output "$d/o3" &&
    expect_grep "another suite's table: message" "another suite\|payload table is invalid" "$d/err"
run "payloads: another key" 0 "$d/err" payloads --key-file "$d/ck.openmined-p256" \
    --input "$d/server.csv" --column email --payload-columns region --output "$d/pay.other"
run "a table of another key" 1 "$d/err" "${M[@]}" --payloads "$d/pay.other" --output "$d/o4" &&
    expect_grep "a table of another key: message" "has no payload for row" "$d/err"
expect_no_output "a table of another key" "$d/o4"
run "a table of another key past --memory" 1 "$d/err" "${M[@]}" --payloads "$d/pay.other" \
    --memory 4K --output "$d/o4m" &&
    expect_grep "a table of another key past --memory: message" "has no payload for row" "$d/err"
expect_no_output "a table of another key past --memory" "$d/o4m"
run "--payloads with --indices" 2 "$d/err" "${M[@]}" --payloads "$d/pay.openmined-p256" \
    --indices --output "$d/o5"
printf 'id,email,region\n1,a@x,n\n2,b@x,s\n3,a@x,e\n' >"$d/dup.csv"
run "a duplicate value" 1 "$d/err" payloads --key-file "$d/sk.openmined-p256" \
    --input "$d/dup.csv" --column email --payload-columns region --output "$d/o6" &&
    expect_grep "a duplicate value: message" "row 3 is there twice" "$d/err"
expect_no_output "a duplicate value" "$d/o6"
run "an unknown column" 2 "$d/err" payloads --key-file "$d/sk.openmined-p256" \
    --input "$d/server.csv" --column email --payload-columns region,zone --output "$d/o7" &&
    expect_grep "an unknown column: message" "no column 'zone'" "$d/err"
run "a payload past --pad-to" 1 "$d/err" payloads --key-file "$d/sk.openmined-p256" \
    --input "$d/server.csv" --column email --payload-columns region --pad-to 4 \
    --output "$d/o8" && expect_grep "a payload past --pad-to: message" "longer than --pad-to 4" "$d/err"
# The faults past --memory (chunks of 8 values): found by the merge of the
# runs (a value twice, naming both rows) or by the first reading.
python3 -c "
print('id,email,region')
for i in range(40): print('%d,%s@x,r%d' % (i, 'v3' if i == 33 else 'v%d' % i, i % 5))
" >"$d/dup40.csv"
run "a duplicate value past --memory" 1 "$d/err" payloads --key-file "$d/sk.openmined-p256" \
    --input "$d/dup40.csv" --column email --payload-columns region --memory 4K \
    --output "$d/o10" &&
    expect_grep "a duplicate value past --memory: message" "row 34 is there twice (first at row 4)" \
        "$d/err"
expect_no_output "a duplicate value past --memory" "$d/o10"
run "a payload past --pad-to, past --memory" 1 "$d/err" payloads \
    --key-file "$d/sk.openmined-p256" --input "$d/server.csv" --column email \
    --payload-columns region --pad-to 4 --memory 4K --output "$d/o11" &&
    expect_grep "a payload past --pad-to, past --memory: message" "row [0-9]* is .*longer than --pad-to 4" "$d/err"
expect_no_output "a payload past --pad-to, past --memory" "$d/o11"
run "an unknown column past --memory" 1 "$d/err" payloads --key-file "$d/sk.openmined-p256" \
    --input "$d/server.csv" --column email --payload-columns region,zone --memory 4K \
    --output "$d/o12" && expect_grep "an unknown column past --memory: message" "no column 'zone'" "$d/err"
run "payloads without --column" 2 "$d/err" payloads --key-file "$d/sk.openmined-p256" \
    --input "$d/client.txt" --payload-columns region --output "$d/o9"

echo "test_payloads: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
