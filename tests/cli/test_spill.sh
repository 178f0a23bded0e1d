#!/usr/bin/env bash
# Tests of the offline commands past their memory budget (PROTOCOL.md §20):
# at budgets of a few KiB, which cut a few thousand values into hundreds of
# spilled runs, `shardpsi setup`, `request` and `response` write the same
# bytes (and permutation) as in memory, for every structure, both reveal
# modes and every suite, from line and CSV input (quoted fields with line
# breaks, commas and "" escapes), from a file and from stdin; the input's
# errors name the same line as when it is read whole; and the faults: a
# record longer than the budget allows, a GCS that does not fit, a
# temporary directory that is missing, not a directory or full (a file size
# limit), a bad --memory, SIGTERM and SIGKILL in the middle of the work,
# each ending with a
# clear message (where there is a process left to give one), a non-zero
# exit and no output or temporary file left anywhere.
#
# Usage: tests/cli/test_spill.sh PSI_BINARY
# Prints one line per failed check and exits 1 if any check failed.
set -u

. "$(dirname "$0")/offline_common.sh"

# expect_clean WHAT DIR...: no file in any DIR but those named keep-*.
expect_clean() {
    local what=$1 d left
    shift
    checks=$((checks + 1))
    for d in "$@"; do
        left=$(find "$d" -mindepth 1 ! -name 'keep-*' 2>/dev/null)
        if [ -n "$left" ]; then
            fail "$what: left behind: $(echo "$left" | tr '\n' ' ')"
            return 1
        fi
    done
}

# Inputs: duplicates on both sides; the client's in CRLF. CSV files with a
# quoted column holding commas, line breaks and "" escapes.
awk 'BEGIN {
    for (i = 0; i < 1500; i++) print "value-" (i * 7919) % 2000;
    print "with, comma"; print "say \"hi\""; print "";
}' >"$tmp/keep-server.txt"
awk 'BEGIN {
    for (i = 0; i < 700; i++) printf "value-%d\r\n", i * 3;
    printf "value-5\r\nvalue-5\r\nnot there\r\n";
}' >"$tmp/keep-client.txt"
awk 'BEGIN {
    print "id,name,note";
    for (i = 0; i < 900; i++) {
        if (i % 7 == 0) printf "%d,\"value-%d\",\"two\nlines, \"\"quoted\"\"\"\r\n", i, i;
        else printf "%d,value-%d,plain\n", i, i;
    }
}' >"$tmp/keep-server.csv"

keys="$tmp/keys"
mkdir -p "$keys"
for suite in openmined-p256 p256-sswu ristretto255; do
    "$psi" keygen --suite "$suite" --output "$keys/s-$suite" 2>/dev/null
    "$psi" keygen --suite "$suite" --output "$keys/c-$suite" 2>/dev/null
done

spill="$tmp/spill"
out="$tmp/out"
logs="$tmp/logs"
mkdir -p "$spill" "$out" "$logs"

# ---- The same bytes at any budget ----------------------------------------

for suite in openmined-p256 p256-sswu ristretto255; do
    sk=(--suite "$suite" --key-file "$keys/s-$suite" --no-progress)
    ck=(--suite "$suite" --key-file "$keys/c-$suite" --no-progress)
    for st in raw gcs bloom_filter; do
        extra=()
        [ "$st" = raw ] || extra=(--num-client-inputs 703 --fpr 1e-6)
        for input in keep-server.txt keep-server.csv; do
            inopt=(--input "$tmp/$input")
            case $input in *.csv) inopt+=(--column name) ;; esac
            perm=()
            [ "$st" = raw ] && perm=(--permutation "$out/mem.perm")
            run "$suite $st $input: in memory" 0 "$logs/log" setup "${sk[@]}" "${inopt[@]}" \
                --structure "$st" "${extra[@]}" "${perm[@]}" --output "$out/mem.setup" || continue
            # A GCS or Bloom structure of these sets needs up to 18 KiB.
            mems="4K 20K"
            [ "$st" = raw ] || mems="24K 40K"
            for mem in $mems; do
                perm=()
                [ "$st" = raw ] && perm=(--permutation "$out/$mem.perm")
                run "$suite $st $input --memory $mem" 0 "$logs/log" setup "${sk[@]}" \
                    "${inopt[@]}" --structure "$st" "${extra[@]}" "${perm[@]}" \
                    --memory "$mem" --temp-dir "$spill" --output "$out/$mem.setup" --progress \
                    || continue
                expect_grep "$suite $st $input --memory $mem: spilled" "merged from sorted runs" \
                    "$logs/log"
                expect_grep "$suite $st $input --memory $mem: progress of the merge" \
                    "merging [0-9]* runs: [0-9,]* values in" "$logs/log"
                expect_same "$suite $st $input --memory $mem: setup" "$out/mem.setup" \
                    "$out/$mem.setup"
                [ "$st" = raw ] && expect_same "$suite $st $input --memory $mem: permutation" \
                    "$out/mem.perm" "$out/$mem.perm"
            done
            rm -f "$out"/*.setup "$out"/*.perm
        done
    done
    for mode in reveal count; do
        copt=()
        sopt=(--reveal)
        [ $mode = count ] && copt=(--count-only) && sopt=()
        run "$suite request $mode: in memory" 0 "$logs/log" request "${ck[@]}" "${copt[@]}" \
            --input "$tmp/keep-client.txt" --output "$out/mem.req" || continue
        # From stdin (`run` gives every command /dev/null).
        cat "$tmp/keep-client.txt" | "$psi" request "${ck[@]}" "${copt[@]}" --input - \
            --memory 4K --temp-dir "$spill" --output "$out/4K.req" 2>"$logs/log"
        rc=$?
        checks=$((checks + 1))
        [ $rc -eq 0 ] || fail "$suite request $mode from stdin at 4K: $(cat "$logs/log")"
        expect_same "$suite request $mode: 4K from stdin" "$out/mem.req" "$out/4K.req"
        run "$suite response $mode: in memory" 0 "$logs/log" response "${sk[@]}" "${sopt[@]}" \
            --request "$out/mem.req" --output "$out/mem.resp" || continue
        run "$suite response $mode: 4K" 0 "$logs/log" response "${sk[@]}" "${sopt[@]}" \
            --request "$out/mem.req" --memory 4K --temp-dir "$spill" --output "$out/4K.resp" &&
            expect_same "$suite response $mode: 4K" "$out/mem.resp" "$out/4K.resp"
        expect_grep "$suite response $mode: spilled" "merged from runs on disk" "$logs/log"
        rm -f "$out"/*.req "$out"/*.resp
    done
done
expect_clean "after the rounds" "$spill" "$out"

# ---- More runs than one merge takes ----------------------------------------
# A merge takes at most 4,096 runs (PSI_PLAN_MAX_SLICES); past that the
# runs are read as groups of consecutive runs, a sorted group merged as it
# is read.  SHARDPSI_MERGE_WIDTH lowers the 4,096 so that a few thousand
# values at 4K (a few hundred runs) take the path billions of values take
# at 256M: every step that spills, sorted (raw setup, count-only response,
# match against raw) and not (GCS and Bloom setups, request, reveal-on
# response, match against GCS), gives the same bytes as in memory.
sk=(--key-file "$keys/s-openmined-p256" --no-progress)
ck=(--key-file "$keys/c-openmined-p256" --no-progress)
for width in 2 7; do
    export SHARDPSI_MERGE_WIDTH=$width
    for st in raw gcs bloom_filter; do
        extra=(--permutation "$out/PERM")
        mem=4K
        [ "$st" = raw ] || extra=(--num-client-inputs 703 --fpr 1e-6) mem=24K
        run "width $width: $st in memory" 0 "$logs/log" setup "${sk[@]}" \
            --input "$tmp/keep-server.txt" --structure "$st" "${extra[@]/PERM/mem.perm}" \
            --output "$out/mem.$st" || continue
        run "width $width: $st at $mem" 0 "$logs/log" setup "${sk[@]}" \
            --input "$tmp/keep-server.txt" --structure "$st" "${extra[@]/PERM/g.perm}" \
            --memory $mem --temp-dir "$spill" --output "$out/g.$st" || continue
        expect_grep "width $width: $st: grouped" "runs read as $width groups" "$logs/log"
        expect_same "width $width: $st setup" "$out/mem.$st" "$out/g.$st"
        [ "$st" = raw ] && expect_same "width $width: permutation" "$out/mem.perm" "$out/g.perm"
    done
    for mode in reveal count; do
        copt=()
        sopt=(--reveal)
        [ $mode = count ] && copt=(--count-only) && sopt=()
        run "width $width: request $mode" 0 "$logs/log" request "${ck[@]}" "${copt[@]}" \
            --input "$tmp/keep-client.txt" --output "$out/mem.req" || continue
        run "width $width: request $mode at 4K" 0 "$logs/log" request "${ck[@]}" "${copt[@]}" \
            --input "$tmp/keep-client.txt" --memory 4K --temp-dir "$spill" --output "$out/g.req" &&
            expect_same "width $width: request $mode" "$out/mem.req" "$out/g.req"
        run "width $width: response $mode" 0 "$logs/log" response "${sk[@]}" "${sopt[@]}" \
            --request "$out/mem.req" --output "$out/mem.resp" || continue
        run "width $width: response $mode at 4K" 0 "$logs/log" response "${sk[@]}" "${sopt[@]}" \
            --request "$out/mem.req" --memory 4K --temp-dir "$spill" --output "$out/g.resp" &&
            expect_same "width $width: response $mode" "$out/mem.resp" "$out/g.resp"
        expect_grep "width $width: response $mode: grouped" "runs read as $width groups" \
            "$logs/log"
        [ $mode = count ] && continue
        for st in raw gcs; do
            outs="rows --indices"
            [ $st = raw ] && outs="$outs --association"
            mem=4K
            [ $st = gcs ] && mem=24K # it holds the GCS setup in a quarter
            for o in $outs; do
                oopt=()
                [ "$o" = rows ] || oopt=("$o")
                [ "$o" = --association ] && oopt+=(--permutation "$out/mem.perm")
                run "width $width: match $st $o" 0 "$logs/log" match "${ck[@]}" \
                    --input "$tmp/keep-client.txt" --setup "$out/mem.$st" \
                    --response "$out/mem.resp" "${oopt[@]}" --output "$out/mem.match" ||
                    continue
                run "width $width: match $st $o at $mem" 0 "$logs/log" match "${ck[@]}" \
                    --input "$tmp/keep-client.txt" --setup "$out/mem.$st" \
                    --response "$out/mem.resp" "${oopt[@]}" --memory $mem --temp-dir "$spill" \
                    --output "$out/g.match" &&
                    expect_same "width $width: match $st $o" "$out/mem.match" "$out/g.match"
                expect_grep "width $width: match $st $o: grouped" \
                    "runs read as $width groups" "$logs/log"
            done
        done
    done
    unset SHARDPSI_MERGE_WIDTH
    rm -f "$out"/mem.* "$out"/g.*
done
expect_clean "after the grouped merges" "$spill" "$out"

# expect_join WHAT SERVER CLIENT TABLE: TABLE is the association table of
# the two line files: for each client row in order whose value the server
# holds, the server's row, each server row paired at most once (a raw
# setup matches each of its elements once, PROTOCOL.md §9.1).
expect_join() {
    checks=$((checks + 1))
    python3 - "$2" "$3" "$4" <<'PY' || fail "$1: not the plain join of the two files"
import sys
rows = lambda p: open(p, 'rb').read().decode().replace('\r\n', '\n').split('\n')[:-1]
server = {}
for i, v in enumerate(rows(sys.argv[1])):
    server.setdefault(v, i)
want, used = [], set()
for j, v in enumerate(rows(sys.argv[2])):
    if v in server and server[v] not in used:
        used.add(server[v])
        want.append(f"{j}\t{server[v]}\n")
got = open(sys.argv[3]).read()
sys.exit(0 if got == ''.join(want) and len(want) > 100 else 1)
PY
}

# ---- match past the budget ------------------------------------------------
# The response is unmasked in chunks into runs (8 at 48K), merged against
# the setup, and the indices put in input order through runs of their own
# (2 at 48K for the 499 matches of GCS and Bloom): rows, indices and
# counts are those of the whole call, from line and CSV input.  The raw
# setup (1,503 values, 52 kB) is four times the quarter of the budget a
# held setup may take: it is read in windows as it is matched.  The
# association table (raw) maps its pairs through the permutation read in
# order and merges them by client index from runs (3 at 48K for the 233
# pairs of the line input); from the line input it is also checked against
# a plain join of the two files computed here.
head -120 "$tmp/keep-server.txt" >"$tmp/keep-server-small.txt"
for suite in openmined-p256 p256-sswu ristretto255; do
    sk=(--suite "$suite" --key-file "$keys/s-$suite" --no-progress)
    ck=(--suite "$suite" --key-file "$keys/c-$suite" --no-progress)
    for input in keep-client.txt keep-server.csv; do
        inopt=(--input "$tmp/$input")
        case $input in *.csv) inopt+=(--column name) ;; esac
        for mode in reveal count; do
            copt=()
            sopt=(--reveal)
            [ $mode = count ] && copt=(--count-only) && sopt=()
            run "$suite match $input $mode: request" 0 "$logs/log" request "${ck[@]}" \
                "${copt[@]}" "${inopt[@]}" --output "$out/m.req" || continue
            run "$suite match $input $mode: response" 0 "$logs/log" response "${sk[@]}" \
                "${sopt[@]}" --request "$out/m.req" --output "$out/m.resp" || continue
            for st in raw gcs bloom_filter; do
                src=keep-server.txt
                extra=(--num-client-inputs 1000 --fpr 1e-6)
                [ "$st" = raw ] && extra=(--permutation "$out/m.perm")
                run "$suite match $st: setup" 0 "$logs/log" setup "${sk[@]}" \
                    --input "$tmp/$src" --structure "$st" "${extra[@]}" \
                    --output "$out/m.setup" || continue
                outs="rows --indices"
                [ $st = raw ] && outs="$outs --association"
                [ $mode = count ] && outs=--count-only
                for o in $outs; do
                    oopt=()
                    [ "$o" = rows ] || oopt=("$o")
                    [ "$o" = --association ] && oopt+=(--permutation "$out/m.perm")
                    what="$suite match $input $st $o"
                    run "$what: in memory" 0 "$logs/log" match "${ck[@]}" "${inopt[@]}" \
                        --setup "$out/m.setup" --response "$out/m.resp" "${oopt[@]}" \
                        --output "$out/mem.match" || continue
                    run "$what: 48K" 0 "$logs/log" match "${ck[@]}" "${inopt[@]}" \
                        --setup "$out/m.setup" --response "$out/m.resp" "${oopt[@]}" \
                        --memory 48K --temp-dir "$spill" --output "$out/48K.match" \
                        --progress || continue
                    expect_same "$what: 48K" "$out/mem.match" "$out/48K.match"
                    expect_grep "$what: spilled" "matched from runs on disk" "$logs/log"
                    expect_grep "$what: progress of the unmasking" \
                        "unmasking the response: [0-9,]* values in" "$logs/log"
                    [ "$o" = --association ] && [ $input = keep-client.txt ] &&
                        expect_join "$what" "$tmp/keep-server.txt" "$tmp/$input" \
                            "$out/48K.match"
                done
                rm -f "$out"/*.match "$out/m.setup" "$out/m.perm"
            done
            rm -f "$out"/m.*
        done
    done
done
expect_clean "after the matches" "$spill" "$out"

# match's faults, in the whole call's order: a bad point in the response
# (index 3), a cut response, a response to another input, a Bloom setup
# that does not fit its share (a raw one does: it is never held), an input
# from stdin (read twice past the budget).
ck=(--key-file "$keys/c-openmined-p256" --no-progress)
sk=(--key-file "$keys/s-openmined-p256" --no-progress)
"$psi" request "${ck[@]}" --input "$tmp/keep-client.txt" --output "$out/ok.req" 2>/dev/null
"$psi" response "${sk[@]}" --reveal --request "$out/ok.req" --output "$out/ok.resp" 2>/dev/null
"$psi" setup "${sk[@]}" --input "$tmp/keep-server-small.txt" --structure raw \
    --output "$out/ok.setup" 2>/dev/null
python3 - "$out/ok.resp" "$out/point.resp" "$out/cut.resp" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[35 * 3 + 2] = 0x05  # a Response has no reveal field before its elements
open(sys.argv[2], 'wb').write(b)
open(sys.argv[3], 'wb').write(b[:-10])
PY
head -650 "$tmp/keep-client.txt" >"$tmp/keep-client-650.txt"
for bad in point cut other; do
    resp="$out/$bad.resp"
    input="$tmp/keep-client.txt"
    [ $bad = other ] && resp="$out/ok.resp" && input="$tmp/keep-client-650.txt"
    run "match, $bad response, in memory" 1 "$logs/whole.log" match "${ck[@]}" \
        --input "$input" --setup "$out/ok.setup" --response "$resp" --output "$out/x.match"
    run "match, $bad response, 48K" 1 "$logs/48K.log" match "${ck[@]}" --input "$input" \
        --setup "$out/ok.setup" --response "$resp" --memory 48K --temp-dir "$spill" \
        --output "$out/x.match"
    expect_same "match, $bad response: the same message" "$logs/whole.log" "$logs/48K.log"
    [ $bad = point ] && expect_grep "match, bad point: its index" \
        "Response.encrypted_elements\[3\]" "$logs/48K.log"
done
"$psi" setup "${sk[@]}" --input "$tmp/keep-server.txt" --structure raw \
    --output "$out/big.setup" 2>/dev/null
run "match, raw setup past a quarter: in memory" 0 "$logs/log" match "${ck[@]}" \
    --input "$tmp/keep-client.txt" --setup "$out/big.setup" --response "$out/ok.resp" \
    --output "$out/mem.match"
run "match, raw setup past a quarter: read in windows" 0 "$logs/log" match "${ck[@]}" \
    --input "$tmp/keep-client.txt" --setup "$out/big.setup" --response "$out/ok.resp" \
    --memory 16K --temp-dir "$spill" --output "$out/x.match"
expect_same "match, raw setup past a quarter: the same rows" "$out/mem.match" "$out/x.match"
rm -f "$out/mem.match" "$out/x.match"
"$psi" setup "${sk[@]}" --input "$tmp/keep-server.txt" --structure bloom_filter \
    --num-client-inputs 1000 --fpr 1e-9 --output "$out/big.setup" 2>/dev/null
run "match, Bloom setup past its share" 1 "$logs/log" match "${ck[@]}" \
    --input "$tmp/keep-client.txt" --setup "$out/big.setup" --response "$out/ok.resp" \
    --memory 16K --temp-dir "$spill" --output "$out/x.match"
expect_grep "match, Bloom setup past its share: the size needed" \
    "holds a bloom setup whole.*raise --memory to at least 43252" "$logs/log"
checks=$((checks + 1))
[ -e "$out/x.match" ] && fail "match, Bloom setup past its share: an output was left"
cat "$tmp/keep-client.txt" | "$psi" match "${ck[@]}" --input - --setup "$out/ok.setup" \
    --response "$out/ok.resp" --memory 48K --temp-dir "$spill" --output "$out/x.match" \
    2>"$logs/log"
rc=$?
checks=$((checks + 1))
[ $rc -eq 2 ] || fail "match past the budget from stdin: exit status $rc, expected 2"
expect_grep "match past the budget from stdin: says why" "give the input as a file" \
    "$logs/log"
# The association table's faults, with the same message in memory and at
# 48K: a permutation with a row given twice, one a line short, a GCS setup.
"$psi" setup "${sk[@]}" --input "$tmp/keep-server-small.txt" --structure raw \
    --permutation "$out/a.perm" --output "$out/a.setup" 2>/dev/null
"$psi" setup "${sk[@]}" --input "$tmp/keep-server-small.txt" --structure gcs \
    --num-client-inputs 1000 --output "$out/gcs.setup" 2>/dev/null
{ head -1 "$out/a.perm"; sed '1,2d' "$out/a.perm"; head -1 "$out/a.perm"; } >"$out/twice.perm"
sed '$d' "$out/a.perm" >"$out/short.perm"
for bad in twice short gcs; do
    setup=$out/a.setup perm=$out/$bad.perm
    [ $bad = gcs ] && setup=$out/gcs.setup perm=$out/a.perm
    for mem in whole 48K; do
        mopt=()
        [ $mem = 48K ] && mopt=(--memory 48K --temp-dir "$spill")
        run "match --association, $bad ($mem)" 1 "$logs/$mem.log" match "${ck[@]}" \
            --input "$tmp/keep-client.txt" --setup "$setup" --response "$out/ok.resp" \
            --association --permutation "$perm" "${mopt[@]}" --output "$out/x.match"
    done
    expect_same "match --association, $bad: the same message" "$logs/whole.log" \
        "$logs/48K.log"
    case $bad in
    twice) why="row [0-9]* is given twice" ;;
    short) why="holds 119 rows, and the setup has 120 elements" ;;
    gcs) why="is a gcs setup: --association needs the raw setup" ;;
    esac
    expect_grep "match --association, $bad: says why" "$why" "$logs/48K.log"
    checks=$((checks + 1))
    [ -e "$out/x.match" ] && fail "match --association, $bad: an output was left"
done
run "match --association without --permutation" 2 "$logs/log" match "${ck[@]}" \
    --input "$tmp/keep-client.txt" --setup "$out/a.setup" --response "$out/ok.resp" \
    --association --output "$out/x.match"
expect_grep "match --association without --permutation: says why" \
    "needs --permutation PERM" "$logs/log"
rm -f "$out"/ok.* "$out"/point.* "$out"/cut.* "$out/big.setup" "$out"/a.* "$out"/*.perm \
    "$out/gcs.setup"
expect_clean "after the match faults" "$spill" "$out"

# ---- The input's errors, as when it is read whole ------------------------

sk=(--key-file "$keys/s-openmined-p256" --no-progress)
# Record 600 has two fields: 1 header line, 600 records, 86 of them two
# lines long (every 7th), so it is on line 688.
awk 'BEGIN {
    print "id,name,note";
    for (i = 0; i < 900; i++) {
        if (i == 600) print "1,2";
        else if (i % 7 == 0) printf "%d,\"value-%d\",\"two\nlines\"\n", i, i;
        else printf "%d,value-%d,plain\n", i, i;
    }
}' >"$tmp/bad.csv"
run "CSV error, in memory" 2 "$logs/whole.log" setup "${sk[@]}" --input "$tmp/bad.csv" \
    --column name --structure raw --output "$out/x.setup"
run "CSV error, 4K" 2 "$logs/4K.log" setup "${sk[@]}" --input "$tmp/bad.csv" --column name \
    --structure raw --memory 4K --temp-dir "$spill" --output "$out/x.setup"
expect_same "CSV error: the same message" "$logs/whole.log" "$logs/4K.log"
expect_grep "CSV error: names the line" "line 688" "$logs/4K.log"
run "a line past the budget" 2 "$logs/log" setup "${sk[@]}" --input <(
    echo a; head -c 20000 /dev/zero | tr '\0' x; echo) --structure raw --memory 4K \
    --temp-dir "$spill" --output "$out/x.setup"
expect_grep "a line past the budget: says so" "does not fit the memory budget" "$logs/log"
run "--memory 100" 2 "$logs/log" setup "${sk[@]}" --input "$tmp/keep-server.txt" \
    --structure raw --memory 100 --output "$out/x.setup"
expect_grep "--memory 100: the least" "at least 4096 bytes" "$logs/log"
run "--memory 12Q" 2 "$logs/log" request --key-file "$keys/c-openmined-p256" \
    --input "$tmp/keep-client.txt" --memory 12Q --output "$out/x.req"
expect_grep "--memory 12Q: not a size" "not a size" "$logs/log"
run "gcs past the budget" 1 "$logs/log" setup "${sk[@]}" --input "$tmp/keep-server.txt" \
    --structure gcs --num-client-inputs 703 --memory 4K --temp-dir "$spill" \
    --output "$out/x.setup"
expect_grep "gcs past the budget: the size needed" \
    "raise --memory to at least about 1[0-9]\{4\}" "$logs/log"
expect_grep "gcs past the budget: refused before masking" "^shardpsi setup: error" "$logs/log"
# From stdin the size is known only at the end, where the exact figure is given.
cat "$tmp/keep-server.txt" | "$psi" setup "${sk[@]}" --input - --structure gcs \
    --num-client-inputs 703 --memory 4K --temp-dir "$spill" --output "$out/x.setup" \
    2>"$logs/log"
rc=$?
checks=$((checks + 1))
[ $rc -eq 1 ] || fail "gcs past the budget from stdin: not refused"
expect_grep "gcs past the budget from stdin: the exact size" \
    "a gcs setup of 1503 values holds [0-9]* bytes" "$logs/log"
expect_clean "after the input errors" "$spill" "$out"

# ---- A request's faults, in the whole call's order ----------------------
# Element 3 (in the first chunk at 4K) gets a bad prefix byte; the message
# is also cut 10 bytes short: the malformed message is named, not the
# point; without the cut, the point, with its index.
ck=(--key-file "$keys/c-openmined-p256" --no-progress)
"$psi" request "${ck[@]}" --input "$tmp/keep-client.txt" --output "$out/ok.req" 2>/dev/null
python3 - "$out/ok.req" "$out/point.req" "$out/cut.req" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[2 + 35 * 3 + 2] = 0x05
open(sys.argv[2], 'wb').write(b)
open(sys.argv[3], 'wb').write(b[:-10])
PY
for bad in point cut; do
    run "request with a bad $bad, in memory" 1 "$logs/whole.log" response "${sk[@]}" --reveal \
        --request "$out/$bad.req" --output "$out/x.resp"
    run "request with a bad $bad, 4K" 1 "$logs/4K.log" response "${sk[@]}" --reveal \
        --request "$out/$bad.req" --memory 4K --temp-dir "$spill" --output "$out/x.resp"
    expect_same "request with a bad $bad: the same message" "$logs/whole.log" "$logs/4K.log"
    if [ $bad = point ]; then
        expect_grep "bad point: its index" "Request.encrypted_elements\[3\]" "$logs/4K.log"
    else
        expect_grep "bad point and cut: the cut first" "PSI_E_MSG_TRUNCATED" "$logs/4K.log"
    fi
done
run "reveal mismatch, 4K" 1 "$logs/log" response "${sk[@]}" --request "$out/ok.req" \
    --memory 4K --temp-dir "$spill" --output "$out/x.resp"
expect_grep "reveal mismatch, 4K: says which flag" "answer it with --reveal" "$logs/log"
rm -f "$out"/*.req
expect_clean "after the request faults" "$spill" "$out"

# ---- The temporary directory ---------------------------------------------

run "temp dir missing" 1 "$logs/log" setup "${sk[@]}" --input "$tmp/keep-server.txt" \
    --structure raw --memory 4K --temp-dir "$tmp/nowhere" --output "$out/x.setup"
expect_grep "temp dir missing: names it" "temporary directory $tmp/nowhere" "$logs/log"
run "temp dir a file" 1 "$logs/log" request --key-file "$keys/c-openmined-p256" \
    --input "$tmp/keep-client.txt" --memory 4K --temp-dir "$tmp/keep-server.txt" \
    --output "$out/x.req"
expect_grep "temp dir a file: names it" "temporary directory" "$logs/log"
# A full disk, as a file size limit: the runs' file cannot grow past 8 KiB.
(
    trap '' XFSZ
    ulimit -f 16
    "$psi" setup "${sk[@]}" --input "$tmp/keep-server.txt" --structure raw --memory 4K \
        --temp-dir "$spill" --output "$out/x.setup" 2>"$logs/log" >/dev/null </dev/null
    echo $? >"$out/rc"
)
checks=$((checks + 1))
[ "$(cat "$out/rc")" = 1 ] || fail "temp dir full: exit status $(cat "$out/rc"), expected 1"
rm -f "$out/rc"
expect_grep "temp dir full: says so" "cannot write the sorted runs" "$logs/log"
expect_clean "after the temp dir faults" "$spill" "$out"

# ---- Interrupted and killed mid-work -------------------------------------

awk 'BEGIN { for (i = 0; i < 400000; i++) print "big-" i }' >"$tmp/keep-big.txt"
# (TERM: a shell without job control starts background jobs with SIGINT
# ignored, and an ignored signal stays ignored; INT and HUP share TERM's
# handler.)
for sig in TERM KILL; do
    "$psi" setup "${sk[@]}" --input "$tmp/keep-big.txt" --structure raw --memory 64K \
        --temp-dir "$spill" --permutation "$out/big.perm" --output "$out/big.setup" \
        --threads 1 --progress 2>"$logs/log" &
    pid=$!
    sleep 1.5
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    checks=$((checks + 1))
    [ "$rc" -ne 0 ] || fail "SIG$sig: the setup finished before the signal (exit 0)"
    expect_clean "after SIG$sig" "$spill" "$out"
    rm -f "$out"/*
done

echo "test_spill: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
