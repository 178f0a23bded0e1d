#!/usr/bin/env bash
# Payloads are data, never structure (PROTOCOL.md §22.1, issue 54): the
# payload tables of payload_craft.py (any bytes, as a hostile server or a
# crafted `server --setup --payloads FILE` sends them) through `shardpsi
# match --payloads` (CSV and line inputs, in memory and past --memory) and
# `shardpsi client --payloads` on loopback against a prebuilt setup:
#  - a crafted payload (a line break, a column more or less, an unclosed
#    quote, terminal escapes, a NUL, a bare quote or CR, DEL) or head fails
#    the command naming the row, with no output;
#  - 40 random payloads of the bytes that make structure: each is refused
#    (no output) or comes out as exactly the client's rows, each with the
#    head's columns and the cells Python's csv module reads in the payload,
#    and a payload holding a control byte is always refused;
#  - honest payloads with commas, quotes and line breaks read back as the
#    same values, and formula-like cells (=HYPERLINK(...), +cmd|..., @SUM(1),
#    -1+1, a tab or CR first) get a ' before them, but with --raw-cells.
# The output is read back with payload_cells_check.py (Python's csv).
#
# Usage: tests/cli/test_payload_cells.sh PSI_BINARY
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 PSI_BINARY" >&2
    exit 2
fi
psi=$1
here=$(dirname "$0")
command -v python3 >/dev/null || { echo "test_payload_cells: python3 is needed"; exit 77; }
. "$here/net_common.sh"
d=$tmp
python3 "$here/payload_craft.py" "$d" || { echo "test_payload_cells: payload_craft.py failed"; exit 1; }

# run WHAT WANT_RC LOG CMD...: `shardpsi CMD` with stderr in LOG, its status checked.
run() {
    local what=$1 want=$2 log=$3 rc
    shift 3
    "$psi" "$@" 2>"$log" >/dev/null </dev/null
    rc=$?
    expect_rc "$what" "$want" "$rc" "$log"
}

# check WHAT OUT csv|lines RAW [ROW HEX]: the output read back (payload_cells_check.py).
check() {
    local what=$1
    shift
    checks=$((checks + 1))
    python3 "$here/payload_cells_check.py" "$1" "$2" "$3" "$d" "${@:4}" >"$d/check.err" ||
        { fail "$what: the output is not the client's rows with the payloads' cells"; show "$d/check.err"; }
}

# refused WHAT LOG OUT ROW: a refusal naming the row (0: the head), no output.
refused() {
    checks=$((checks + 1))
    if [ "$4" = 0 ]; then
        grep -q "the header line of its columns is refused" "$2" || { fail "$1: message"; show "$2"; }
    else
        grep -q "the payload of matched row $4 is refused" "$2" || { fail "$1: message"; show "$2"; }
    fi
    checks=$((checks + 1))
    [ ! -e "$3" ] || fail "$1: $3 was written"
}

S=(--key-file "$d/sk" --suite ristretto255)
C=(--key-file "$d/ck" --suite ristretto255)
run "setup" 0 "$d/err" setup "${S[@]}" --input "$d/server.txt" --lines --structure raw \
    --output "$d/setup"
run "request" 0 "$d/err" request "${C[@]}" --input "$d/client.csv" --column email \
    --output "$d/req"
run "response" 0 "$d/err" response "${S[@]}" --request "$d/req" --reveal --output "$d/resp"
run "request (lines)" 0 "$d/err" request "${C[@]}" --input "$d/client.txt" --lines \
    --output "$d/reql"
run "response (lines)" 0 "$d/err" response "${S[@]}" --request "$d/reql" --reveal \
    --output "$d/respl"
# --memory 64M: the default budget (a quarter of the machine) costs each run
# its buffers' pages under meson's MALLOC_PERTURB_; 4K after it (the last
# wins) takes the paths past the budget.
M=(match "${C[@]}" --memory 64M --input "$d/client.csv" --column email --setup "$d/setup"
    --response "$d/resp")
ML=(match "${C[@]}" --memory 64M --input "$d/client.txt" --lines --setup "$d/setup"
    --response "$d/respl")

# --- honest payloads: the same values, formulas neutralised unless --raw-cells --
for raw in 0 1; do
    R=()
    [ "$raw" = 1 ] && R=(--raw-cells)
    run "match, honest, raw $raw" 0 "$d/err" "${M[@]}" --payloads "$d/honest.pay" "${R[@]}" \
        --output "$d/h$raw.csv" && check "match, honest, raw $raw" "$d/h$raw.csv" csv "$raw"
    run "match --memory 4K, honest, raw $raw" 0 "$d/err" "${M[@]}" --memory 4K \
        --payloads "$d/honest.pay" "${R[@]}" --output "$d/hm$raw.csv" &&
        expect_grep "match --memory 4K, raw $raw: past the budget" "matched from runs on disk" \
            "$d/err" &&
        check "match --memory 4K, honest, raw $raw" "$d/hm$raw.csv" csv "$raw"
    run "match lines, honest, raw $raw" 0 "$d/err" "${ML[@]}" --payloads "$d/honest.pay" \
        "${R[@]}" --output "$d/h$raw.tsv" && check "match lines, honest, raw $raw" \
        "$d/h$raw.tsv" lines "$raw"
done
checks=$((checks + 1))
grep -q "'=HYPERLINK" "$d/h0.csv" && grep -q "^n1,u1@example.org,.*,'+cmd|' /C calc'!A0," \
    "$d/h0.csv" || fail "the neutralised cells are not in the output"
checks=$((checks + 1))
grep -q ',=HYPERLINK\|,"=HYPERLINK' "$d/h1.csv" || fail "--raw-cells: =HYPERLINK is not raw"
run "--raw-cells without --payloads" 2 "$d/err" "${M[@]}" --raw-cells --output "$d/x.csv"

# --- crafted payloads and heads: refused, naming the row; nothing written ------
while IFS=$'\t' read -r c row what; do
    run "match, $what" 1 "$d/err" "${M[@]}" --payloads "$d/$c.pay" --output "$d/$c.csv" &&
        refused "match, $what" "$d/err" "$d/$c.csv" "$row"
    run "match lines, $what" 1 "$d/err" "${ML[@]}" --payloads "$d/$c.pay" --output "$d/$c.tsv" &&
        refused "match lines, $what" "$d/err" "$d/$c.tsv" "$row"
done <"$d/crafted"
ROW3=$(sed -n 's/^c00\t\([0-9]*\)\t.*/\1/p' "$d/crafted")
run "match --memory 4K, a line break" 1 "$d/err" "${M[@]}" --memory 4K \
    --payloads "$d/c00.pay" --output "$d/c00m.csv" &&
    refused "match --memory 4K, a line break" "$d/err" "$d/c00m.csv" "$ROW3"

# --- random payloads: refused, or exactly the rows and columns ---------------------
while IFS=$'\t' read -r r row hex; do
    "$psi" "${M[@]}" --payloads "$d/$r.pay" --output "$d/$r.csv" 2>"$d/err" >/dev/null
    rc=$?
    checks=$((checks + 1))
    if [ "$rc" = 0 ]; then
        # Control bytes but the tab, CR and LF: never let through.
        python3 -c 'import sys; b = bytes.fromhex(sys.argv[1])
sys.exit(any((c < 32 and c not in (9, 10, 13)) or c == 127 for c in b))' "$hex" ||
            fail "random $r: a payload with a control byte was accepted ($hex)"
        check "random $r ($hex)" "$d/$r.csv" csv 0 "$row" "$hex"
    elif [ "$rc" = 1 ]; then
        refused "random $r ($hex)" "$d/err" "$d/$r.csv" "$row"
    else
        fail "random $r: exit status $rc"
    fi
    accepted=$((${accepted:-0} + (rc == 0 ? 1 : 0)))
done <"$d/random"
checks=$((checks + 1))
[ "${accepted:-0}" -ge 10 ] && [ "${accepted:-0}" -le 30 ] ||
    fail "random payloads: ${accepted:-0} of 40 accepted, not a mix"

# --- the server's side: shardpsi payloads refuses what a client would refuse -------
# A CSV field its reader accepts can still hold a control byte: refused at
# its row, in memory and past --memory (row 37 in the second chunk at 16K).
python3 - "$d" <<'PY'
import sys
d = sys.argv[1]
with open(d + '/esc.csv', 'wb') as f:
    f.write(b'email,region\n')
    for i in range(50):
        f.write(b'e%d@example.org,%s\n' % (i, b'"\x1b[2Jgone"' if i == 36 else b'north'))
with open(d + '/eschead.csv', 'wb') as f:
    f.write(b'email,reg\x07ion\ne0@example.org,north\n')
PY
# (In memory the input is refused as a bad input, status 2; past the
# budget the build fails, status 1.)
for mem in 64M:2 16K:1; do
    want=${mem#*:} mem=${mem%:*}
    run "payloads --memory $mem, a control byte" "$want" "$d/err" payloads "${S[@]}" --memory "$mem" \
        --input "$d/esc.csv" --column email --payload-columns region --output "$d/esc.$mem" &&
        expect_grep "payloads --memory $mem, a control byte: message" \
            "esc.csv: the payload of row 37 is refused: byte 2 is the control byte 0x1b" "$d/err"
    checks=$((checks + 1))
    [ ! -e "$d/esc.$mem" ] || fail "payloads --memory $mem, a control byte: output written"
done
run "payloads, a control byte in the header" 2 "$d/err" payloads "${S[@]}" \
    --input "$d/eschead.csv" --column email --payload-columns $'reg\aion' --output "$d/esch" &&
    expect_grep "payloads, a control byte in the header: message" \
        "the header of the payload columns is refused: byte 4 is the control byte 0x07" "$d/err"

# --- the network client against `shardpsi server --setup --payloads FILE` ----------
# net_round NAME PAYFILE CLIENT_ARGS...: a server of the prebuilt setup with
# PAYFILE, a client writing $d/NAME.out; sets $crc and $rc (the server's).
net_round() {
    local name=$1 pay=$2
    shift 2
    start_server "$d/$name.server.err" --setup "$d/setup" "${S[@]}" --reveal --payloads "$pay" ||
        { crc=-1; rc=-1; return; }
    "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 20 "${C[@]}" --memory 64M --payloads \
        --output "$d/$name.out" "$@" 2>"$d/$name.err" >/dev/null
    crc=$?
    wait_pid "$spid"
}
NC=(--input "$d/client.csv" --column email)
net_round honest "$d/honest.pay" "${NC[@]}"
expect_rc "client, honest" 0 "$crc" "$d/honest.err" "$d/honest.server.err" &&
    check "client, honest" "$d/honest.out" csv 0
net_round honestraw "$d/honest.pay" "${NC[@]}" --raw-cells
expect_rc "client --raw-cells, honest" 0 "$crc" "$d/honestraw.err" &&
    check "client --raw-cells, honest" "$d/honestraw.out" csv 1
net_round honestl "$d/honest.pay" --input "$d/client.txt" --lines
expect_rc "client lines, honest" 0 "$crc" "$d/honestl.err" &&
    check "client lines, honest" "$d/honestl.out" lines 0
# At 4K the table (3.8 KiB) is past a quarter of the budget: kept in a file.
net_round honestm "$d/honest.pay" "${NC[@]}" --memory 4K
expect_rc "client --memory 4K, honest" 0 "$crc" "$d/honestm.err" &&
    check "client --memory 4K, honest" "$d/honestm.out" csv 0
while IFS=$'\t' read -r c row what; do
    case $c in c00 | c02 | c03 | c06 | c11) ;; *) continue ;; esac
    net_round "n$c" "$d/$c.pay" "${NC[@]}"
    expect_rc "client, $what" 1 "$crc" "$d/n$c.err" &&
        refused "client, $what" "$d/n$c.err" "$d/n$c.out" "$row"
    expect_rc "client, $what: server" 1 "$rc" "$d/n$c.server.err"
done <"$d/crafted"
net_round nm "$d/c02.pay" "${NC[@]}" --memory 4K
expect_rc "client --memory 4K, an unclosed quote" 1 "$crc" "$d/nm.err" &&
    refused "client --memory 4K, an unclosed quote" "$d/nm.err" "$d/nm.out" "$ROW3"

echo "test_payload_cells: $checks checks, $failures failed (random payloads: ${accepted:-0} of 40 accepted)"
[ "$failures" -eq 0 ]
