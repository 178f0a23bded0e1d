#!/usr/bin/env bash
# Tests of `shardpsi-mpi` (the Open MPI runner of the offline commands, PROTOCOL.md
# §17) against the single-process `shardpsi`: every output file (messages,
# permutations, match results) must be the same bytes as `shardpsi`'s for the same
# key file, input and options, whatever the number of ranks.
#
#   a. The committed vectors (VECTORS_DIR/*.json of format psi-wire-vectors/1,
#      written out by tests/mpi/mpi_vector_cases.py; cases whose values cannot be
#      written one per line are skipped and counted): each step (setup with
#      the case's structure, fpr and num_client_inputs, and --permutation for
#      raw; request, with --count-only when the case is not reveal; response;
#      match: rows and --indices, or --count-only) under `shardpsi` and under
#      `mpirun -np 4 shardpsi-mpi` for every case, and -np 1 and -np 2 on every
#      fourth case only (TEST_MPI_STRIDE; 1 = all).  Which cases:
#      TEST_MPI_CASES=kinds (the default) takes the first case of each
#      suite, structure and reveal setting and the first of each group of
#      cases (basic, empty-server, duplicates-200, unicode, ...): 47 of the
#      124, every kind of input and output the runner handles, in about 80 s
#      of both cores; TEST_MPI_CASES=all takes every case, ~890 mpiruns and
#      about 4 minutes alone, 7.5 within CI's meson test (measured
#      2026-12-04), which put CI past its hour: run it after changing mpi/.
#      An mpirun of shardpsi-mpi costs ~0.15 s of CPU and ~0.2 s here with
#      the start-up settings below (0.3-0.5 s without), most of a small
#      case's time.
#      Cases run TEST_MPI_JOBS (3) at a time, each case's mpiruns in a
#      session directory of their own.
#      psi's messages and match results are also compared with the
#      vector's expected bytes.  Each shardpsi-mpi step reads psi's files
#      (request, setup, response), so a difference shows in the step that
#      makes it.  Per-rank threads vary: -np 1 --threads 2,
#      -np 2 --threads 2 --shards 3, -np 4 --threads 1.
#      First the payload vectors (part_a_payloads): shardpsi-mpi payloads
#      writes each case's table, and match --payloads opens it, as the
#      vector says; its damaged tables end the match with their codes.
#   b. A generated set (deterministic splitmix64 in python3) of
#      TEST_MPI_BIG_N (1,000,000) server values with ~10% duplicate rows,
#      empty lines, CRLF lines and a byte order mark, and TEST_MPI_CLIENT_N
#      (100,000) client values (~40% drawn from the server's, ~10% duplicate
#      rows, empty lines, every third line CRLF, no final newline): raw
#      setup with --permutation under -np 1, 2 and 4 against psi (and the
#      permutation is one of 0..N-1);
#      request (reveal and --count-only), response (--reveal and not) and
#      match (rows, --indices, --count-only) under -np 2 and 4 against psi;
#      psi's match results against a plain comparison of the inputs (awk).
#      Sizes: shardpsi setup costs ~85 us of CPU a value here (1M values: ~45 s
#      on 2 cores), and the part runs 4 setups of the server and 21 client
#      steps (7 in psi, 7 each under -np 2 and 4), so 1M + 100k keeps the
#      part near 5 minutes; a 200k client would add ~90 s.
#      Run only when TEST_MPI_PARTS names it: the default (acd) keeps
#      `meson test` short enough to run after every edit.  scripts/test.sh
#      (CI) runs it once the normal build's suites pass, with
#      TEST_MPI_PARTS=b; TEST_MPI_PARTS=abcd runs everything.
#   c. Interop: a shardpsi-mpi setup and a shardpsi-mpi response to a plain psi
#      request, matched by plain shardpsi match, give the plain comparison (raw
#      rows/--indices, gcs --indices); shardpsi-mpi requests (reveal and
#      count-only) answered by plain shardpsi response and matched by psi; a
#      shardpsi-mpi setup served by `shardpsi server --setup` to a plain `shardpsi client`
#      over loopback; two valid requests of a non-canonical layout answered
#      as psi does.  Then every step past its budget (part_c_budget): setup
#      (raw with its permutation, GCS, Bloom), request and response (reveal
#      and count-only) at 4K (8 values a chunk; 256K for GCS and Bloom)
#      under -np 1 and 3, the same bytes as psi's and nothing left in the
#      temporary directory; a non-canonical request refused past the budget
#      (with the size it needs) and answered within 1M; a GCS setup past
#      rank 0's budget refused; a --temp-dir that is not there.
#   d. Faults, each with its exit status, a message naming the command
#      (and its cause) and no output or <output>.tmp.* file left: a missing
#      input; --input -; --column; a header line read as lines without
#      --lines (also with rank 0's slice empty), and --lines reading it as
#      psi does; --memory below 4K (the message names shardpsi-mpi); a key
#      file readable by others; a truncated request; a request whose only bad point is its last
#      element (in rank 3's slice under -np 4: the message must name
#      rank 3), once more past the budget (the same message), once more
#      with an existing file at the output path (left untouched); rank 1
#      killed (SIGKILL) during a setup of the big input under -np 2: mpirun
#      exits non-zero within 120 s, no output, no rank left running.
#
# Usage: tests/mpi/test_mpi.sh PSI PSI_MPI VECTORS_DIR
# Prints one line per failed check, the number of skipped vector cases, and
# `test_mpi: N checks, M failed`; exits 1 if any check failed, 77 if mpirun
# or python3 is missing.  TEST_MPI_PARTS (default acd: all but the big set
# of part b) picks parts.
# mpirun runs with --oversubscribe, as root with OMPI_ALLOW_RUN_AS_ROOT*, and
# with OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader unless already set (one
# node; this halves the start-up against UCX), and with Open MPI's session
# directory under the test's own temporary directory, so that runs of this
# test at once, or other mpiruns of the user, do not share /tmp/ompi.*.
set -u

if [ $# -ne 3 ]; then
    echo "usage: $0 PSI PSI_MPI VECTORS_DIR" >&2
    exit 2
fi
psi=$1
psi_mpi=$2
vectors=$3
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v mpirun >/dev/null 2>&1; then
    echo "test_mpi: mpirun not found: skipped"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "test_mpi: python3 not found: skipped"
    exit 77
fi
for x in "$psi" "$psi_mpi"; do
    [ -x "$x" ] || { echo "test_mpi: $x is not an executable" >&2; exit 2; }
done
[ -d "$vectors" ] || { echo "test_mpi: $vectors is not a directory" >&2; exit 2; }

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_pml=${OMPI_MCA_pml-ob1} OMPI_MCA_btl=${OMPI_MCA_btl-self,vader}
# Start-up of each mpirun and rank, which is most of the cost of the small
# runs: no PCI, OpenCL or GL discovery by hwloc (reading PCI configuration
# space from sysfs was a third of a small run's CPU time on a VM, for no
# use with self,vader), PMIx's plain hash store, and the modex done on
# demand.  None of it touches what shardpsi-mpi computes or sends.
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS--linuxio,-pci,-gl,-opencl}
export HWLOC_PLUGINS_BLACKLIST=${HWLOC_PLUGINS_BLACKLIST-hwloc_pci,hwloc_gl,hwloc_opencl}
export PMIX_MCA_gds=${PMIX_MCA_gds-hash}
export OMPI_MCA_pmix_base_async_modex=${OMPI_MCA_pmix_base_async_modex-1}
export OMPI_MCA_pmix_base_collect_data=${OMPI_MCA_pmix_base_collect_data-0}
# Open MPI's session directory (and PMIx's files in it) under $tmp, not
# /tmp/ompi.HOST.UID: that one is shared by every mpirun of the user, and an
# mpirun that removes it on exit can pull it from under one starting beside
# it (two runs of this test at once, or the concurrent vector cases below).
# Part a gives each case a directory of its own below this one.
ompi_tmp=$tmp/ompi
mkdir -p "$ompi_tmp" || exit 2
export OMPI_MCA_orte_tmpdir_base=$ompi_tmp
parts=${TEST_MPI_PARTS:-acd}
njobs=${TEST_MPI_JOBS:-3}
cases=${TEST_MPI_CASES:-kinds}
case $cases in
all | kinds) ;;
*) echo "test_mpi: TEST_MPI_CASES must be all or kinds, not $cases" >&2; exit 2 ;;
esac
stride=${TEST_MPI_STRIDE:-4}
big_n=${TEST_MPI_BIG_N:-1000000}
client_n=${TEST_MPI_CLIENT_N:-100000}
verbose=${TEST_MPI_VERBOSE:-0}
checks=0
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

note() {
    [ "$verbose" = 1 ] && echo "test_mpi: $*"
    return 0
}

# run WHAT WANT_RC LOG CMD...: runs CMD with stderr in LOG (stdout in
# LOG.out) and checks its exit status.
run() {
    local what=$1 want=$2 log=$3 rc
    shift 3
    "$@" 2>"$log" >"$log.out" </dev/null
    rc=$?
    checks=$((checks + 1))
    if [ "$rc" -ne "$want" ]; then
        fail "$what: exit status $rc, expected $want"
        sed -n '1,8s/^/    /p' "$log"
        return 1
    fi
    return 0
}

# mpi NP TIMEOUT ARGS...: shardpsi-mpi ARGS under mpirun -np NP, killed after
# TIMEOUT seconds (exit status 124).  After a run that hung, the next runs
# of the same group (a vector case, a part) are not started (exit status
# 125) until hung is reset, so a hanging binary does not stall the test.
hung=0
mpi() {
    local np=$1 t=$2 rc
    shift 2
    if [ "$hung" = 1 ]; then
        echo "not run: an earlier shardpsi-mpi run of this group hung" >&2
        return 125
    fi
    timeout -k 10 "$t" mpirun --oversubscribe -np "$np" "$psi_mpi" "$@"
    rc=$?
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && hung=1
    return "$rc"
}

expect_same() {
    checks=$((checks + 1))
    if ! cmp -s "$2" "$3"; then
        fail "$1: $2 and $3 differ ($(cmp "$2" "$3" 2>&1 | head -1))"
        return 1
    fi
}

expect_grep() {
    checks=$((checks + 1))
    grep -q -- "$2" "$3" || {
        fail "$1: no '$2' in: $(grep -v '^[-]*$' "$3" | head -c 600)"
        return 1
    }
}

# expect_no_output WHAT FILE: neither FILE nor a temporary file beside it.
expect_no_output() {
    checks=$((checks + 1))
    if [ -e "$2" ] || ls "$2".tmp.* >/dev/null 2>&1; then
        fail "$1: an output file was left: $(ls -d "$2"* 2>/dev/null | tr '\n' ' ')"
    fi
}

# Per-rank thread layouts of shardpsi-mpi (the bytes never depend on them).
layout() {
    case $1 in
    1) echo "--threads 2" ;;
    2) echo "--threads 2 --shards 3" ;;
    *) echo "--threads 1" ;;
    esac
}

# ------------------------------------------------------------ a. vectors

# vector_case DIR SUITE STRUCTURE FPR NCI REVEAL NAME NPS: one case, psi and
# shardpsi-mpi under each -np of NPS.  Runs in a subshell: its counts go to
# DIR/counts, its failure lines to its stdout.
vector_case() {
    local d=$1 su=$2 st=$3 fpr=$4 nc=$5 rv=$6 name=$7 nps=$8 np m f w
    local S=(--suite "$su") X=() CO=() RV=() modes=(count) T mo
    checks=0
    failures=0
    # this case's mpiruns, one after another, in a session directory of their own
    export OMPI_MCA_orte_tmpdir_base=$ompi_tmp/${d##*/}
    mkdir -p "$OMPI_MCA_orte_tmpdir_base"
    if [ "$st" = raw ]; then
        X=(--permutation PERM)
    else
        X=(--fpr "$fpr" --num-client-inputs "$nc")
    fi
    if [ "$rv" = 1 ]; then RV=(--reveal); modes=(rows indices); else CO=(--count-only); fi
    # psi: the reference, itself checked against the vector.
    run "$name: shardpsi setup" 0 "$d/psi.err" "$psi" setup --key-file "$d/sk" "${S[@]}" \
        --input "$d/server.txt" --structure "$st" "${X[@]/PERM/$d/ref.perm}" \
        --output "$d/ref.setup"
    run "$name: shardpsi request" 0 "$d/psi.err" "$psi" request --key-file "$d/ck" "${S[@]}" \
        --input "$d/client.txt" "${CO[@]}" --output "$d/ref.req"
    run "$name: shardpsi response" 0 "$d/psi.err" "$psi" response --key-file "$d/sk" "${S[@]}" \
        --request "$d/ref.req" "${RV[@]}" --output "$d/ref.resp"
    for f in setup req resp; do
        expect_same "$name: psi $f vs the vector" "$d/ref.$f" "$d/exp.$f"
    done
    for m in "${modes[@]}"; do
        mo=()
        [ "$m" = indices ] && mo=(--indices)
        [ "$m" = count ] && mo=(--count-only)
        run "$name: shardpsi match $m" 0 "$d/psi.err" "$psi" match --key-file "$d/ck" "${S[@]}" \
            --input "$d/client.txt" --setup "$d/ref.setup" --response "$d/ref.resp" \
            "${mo[@]}" --output "$d/ref.$m" || continue
        w=$d/exp.$m
        [ "$m" = indices ] && w=$d/exp.idx
        expect_same "$name: shardpsi match $m vs the vector" "$d/ref.$m" "$w"
    done
    for np in $nps; do
        hung=0
        if [ "$(find "$hangs" -type f | wc -l)" -ge 3 ]; then
            checks=$((checks + 1))
            fail "$name: shardpsi-mpi not run: 3 cases hung already"
            break
        fi
        # shellcheck disable=SC2207
        T=($(layout "$np"))
        local p=$d/np$np L="$name: shardpsi-mpi -np $np"
        if run "$L setup" 0 "$p.err" mpi "$np" 30 setup --key-file "$d/sk" "${S[@]}" \
            "${T[@]}" --input "$d/server.txt" --structure "$st" "${X[@]/PERM/$p.perm}" \
            --output "$p.setup"; then
            expect_same "$L setup" "$p.setup" "$d/ref.setup"
            [ "$st" = raw ] && expect_same "$L permutation" "$p.perm" "$d/ref.perm"
        fi
        run "$L request" 0 "$p.err" mpi "$np" 30 request --key-file "$d/ck" "${S[@]}" \
            "${T[@]}" --input "$d/client.txt" "${CO[@]}" --output "$p.req" &&
            expect_same "$L request" "$p.req" "$d/ref.req"
        run "$L response" 0 "$p.err" mpi "$np" 30 response --key-file "$d/sk" "${S[@]}" \
            "${T[@]}" --request "$d/ref.req" "${RV[@]}" --output "$p.resp" &&
            expect_same "$L response" "$p.resp" "$d/ref.resp"
        for m in "${modes[@]}"; do
            mo=()
            [ "$m" = indices ] && mo=(--indices)
            [ "$m" = count ] && mo=(--count-only)
            run "$L match $m" 0 "$p.err" mpi "$np" 30 match --key-file "$d/ck" "${S[@]}" \
                "${T[@]}" --input "$d/client.txt" --setup "$d/ref.setup" \
                --response "$d/ref.resp" "${mo[@]}" --output "$p.$m" &&
                expect_same "$L match $m" "$p.$m" "$d/ref.$m"
        done
        [ "$hung" = 1 ] && touch "$hangs/${d##*/}.$np"
    done
    echo "$checks $failures" >"$d/counts"
}

# vector_manifest DIR WHAT WHY [--payloads]: the vector cases written to DIR/cases by
# mpi_vector_cases.py, listed in DIR/manifest; sets n_cases.  Returns 1 when
# there are none.
vector_manifest() {
    local v=$1 what=$2 why=$3 skipped
    shift 3
    if ! python3 "$here/mpi_vector_cases.py" "$@" "$vectors" "$v/cases" >"$v/manifest" \
        2>"$v/skipped"; then
        checks=$((checks + 1))
        fail "mpi_vector_cases.py $* failed: $(tail -3 "$v/skipped")"
        return 1
    fi
    n_cases=$(wc -l <"$v/manifest" | tr -d ' ')
    skipped=$(sed -n 's/^skipped \([0-9]*\) of.*/\1/p' "$v/skipped")
    echo "test_mpi: $what: $n_cases cases, ${skipped:-?} skipped ($why)"
    checks=$((checks + 1))
    [ "$n_cases" -gt 0 ] || { fail "no $what cases in $vectors"; return 1; }
}

part_a() {
    local v=$tmp/vectors c su st fpr nc rv name i=0 nps n_cases
    hangs=$v/hangs
    mkdir -p "$v" "$hangs"
    part_a_payloads
    vector_manifest "$v" vectors "a value not representable one per line" || return
    if [ "$cases" = kinds ]; then
        # the first case of each suite, structure and reveal setting, and
        # the first of each group (the name between "file:" and the first
        # "/": basic, empty-server, ...), in the manifest's order
        awk -F '\t' '{ g = $7; sub(/^[^:]*:/, "", g); sub(/\/.*/, "", g)
                        a = !kind[$2 FS $3 FS $6]++; b = !group[g]++ }
                      a || b' "$v/manifest" >"$v/manifest.kinds" &&
            mv "$v/manifest.kinds" "$v/manifest"
        echo "test_mpi: vectors: TEST_MPI_CASES=kinds: $(wc -l <"$v/manifest" | tr -d ' ')" \
            "of $n_cases cases (one of each suite, structure and reveal setting, one of each group)"
    fi
    while IFS=$'\t' read -r c su st fpr nc rv name; do
        nps=4
        [ $((i % stride)) -eq 0 ] && nps="1 2 4"
        i=$((i + 1))
        while [ "$(jobs -rp | wc -l)" -ge "$njobs" ]; do wait -n; done
        (vector_case "$v/cases/$c" "$su" "$st" "$fpr" "$nc" "$rv" "$name" "$nps") \
            >"$v/cases/$c/fails" 2>&1 &
    done <"$v/manifest"
    wait
    while IFS=$'\t' read -r c _; do
        c=$v/cases/$c
        cat "$c/fails"
        if [ -f "$c/counts" ]; then
            read -r n f <"$c/counts"
            checks=$((checks + n))
            failures=$((failures + f))
        else
            checks=$((checks + 1))
            fail "vector case $c did not finish"
        fi
    done <"$v/manifest"
}

# The payload vectors (vectors/shardpsi-payloads.json, PROTOCOL.md §22), the
# cases whose payloads can be CSV columns (mpi_vector_cases.py --payloads):
# shardpsi-mpi payloads under -np 1 and 3 writes the vector's table from the
# case's key, values, L and salt; shardpsi-mpi match --payloads opens it after
# a round (held, and past an 8K budget) and writes the vector's payloads for
# the matched rows; each damaged table ends the match with its code, no output.
part_a_payloads() {
    local v=$tmp/payvec c su L salt k name d np t code tname n_cases
    mkdir -p "$v"
    vector_manifest "$v" "payload vectors" "payloads not one CSV row's columns" --payloads ||
        return
    while IFS=$'\t' read -r c su L salt k name; do
        d=$v/cases/$c
        hung=0
        local S=(--suite "$su") P=(--input "$d/server.csv" --column value --salt "$salt"
            --payload-columns "$(seq -s, -f 'p%g' 1 "$k")")
        [ "$L" -gt 0 ] && P+=(--pad-to "$L")
        for np in 1 3; do
            run "$name: shardpsi-mpi -np $np payloads" 0 "$d/err" mpi "$np" 30 payloads \
                --key-file "$d/sk" "${S[@]}" "${P[@]}" --output "$d/m$np.pay" &&
                expect_same "$name: shardpsi-mpi -np $np payloads vs the vector" "$d/m$np.pay" \
                    "$d/exp.pay"
        done
        run "$name: shardpsi setup" 0 "$d/err" "$psi" setup --key-file "$d/sk" "${S[@]}" \
            --input "$d/server.txt" --structure raw --output "$d/setup" &&
            run "$name: shardpsi request" 0 "$d/err" "$psi" request --key-file "$d/ck" \
                "${S[@]}" --input "$d/client.txt" --output "$d/req" &&
            run "$name: shardpsi response" 0 "$d/err" "$psi" response --key-file "$d/sk" \
                "${S[@]}" --request "$d/req" --reveal --output "$d/resp" || continue
        local M=(match --key-file "$d/ck" "${S[@]}" --input "$d/client.txt" --setup "$d/setup"
            --response "$d/resp")
        for np in 1 3; do
            local mem=256M
            [ "$np" = 1 ] && mem=8K
            run "$name: shardpsi-mpi -np $np match --payloads --memory $mem" 0 "$d/err" mpi \
                "$np" 30 "${M[@]}" --payloads "$d/exp.pay" --memory "$mem" --output "$d/j$np" &&
                expect_same "$name: shardpsi-mpi -np $np match --payloads vs the vector" \
                    "$d/j$np" "$d/exp.rows"
        done
        while IFS=$'\t' read -r t code tname; do
            run "$name, $tname: shardpsi-mpi match" 1 "$d/err" mpi 3 30 "${M[@]}" \
                --payloads "$d/$t" --output "$d/o.$t" &&
                expect_grep "$name, $tname: shardpsi-mpi match: message" "$code" "$d/err"
            expect_no_output "$name, $tname: shardpsi-mpi match" "$d/o.$t"
        done <"$d/tampered"
    done <"$v/manifest"
}

# ------------------------------------------------------------ generated sets

# gen_sets DIR N_SERVER N_CLIENT SEED: DIR/server.txt, DIR/client.txt (see the
# header), the expected match results DIR/want.{raw,member}.{idx,rows,count},
# and the key files DIR/sk, DIR/ck.
gen_sets() {
    local d=$1 k
    mkdir -p "$d"
    python3 - "$@" <<'EOF' || return 1
import sys
d, ns, nc, state = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
M = (1 << 64) - 1
def nxt():  # splitmix64
    global state
    state = (state + 0x9E3779B97F4A7C15) & M
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)
srv = []
with open(d + "/server.txt", "w", newline="", encoding="utf-8") as f:
    f.write("\ufeff")  # a byte order mark, not part of the first value
    for i in range(ns):
        r = nxt()
        if i % 99991 == 17:
            v = ""
        elif i and r % 10 == 0:
            v = srv[nxt() % i]
        else:
            v = "u%011x" % (r >> 20)
        srv.append(v)
        f.write(v + ("\r\n" if i % 50023 == 11 else "\n"))
cli = []
with open(d + "/client.txt", "w", newline="", encoding="utf-8") as f:
    for j in range(nc):
        r = nxt()
        k = r % 20
        if j % 9973 == 5:
            v = ""
        elif j and k < 2:
            v = cli[nxt() % j]
        elif k < 10 and ns:
            v = srv[nxt() % ns]
        else:
            v = "c%011x" % (r >> 20)
        cli.append(v)
        if j == nc - 1:
            f.write(v)  # no final newline
        else:
            f.write(v + ("\r\n" if j % 3 == 0 else "\n"))
EOF
    # Expected results (PROTOCOL.md §9.5): raw pairs copies one to one, gcs
    # tests membership.
    awk 'NR == FNR { if (FNR == 1) sub(/^\357\273\277/, ""); sub(/\r$/, ""); s[$0]++; next }
         { sub(/\r$/, ""); c[$0]++ }
         c[$0] <= s[$0] { print FNR - 1 }' "$d/server.txt" "$d/client.txt" >"$d/want.raw.idx"
    awk 'NR == FNR { if (FNR == 1) sub(/^\357\273\277/, ""); sub(/\r$/, ""); s[$0]++; next }
         { sub(/\r$/, "") }
         ($0 in s) { print FNR - 1 }' "$d/server.txt" "$d/client.txt" >"$d/want.member.idx"
    for k in raw member; do
        awk 'NR == FNR { w[$1 + 1] = 1; next } (FNR in w) { sub(/\r$/, ""); print }' \
            "$d/want.$k.idx" "$d/client.txt" >"$d/want.$k.rows"
        wc -l <"$d/want.$k.idx" | tr -d ' ' >"$d/want.$k.count"
    done
    printf '%s\n' 6b0e5a3c2f1d4e8a9b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a >"$d/sk"
    printf '%s\n' 1f2e3d4c5b6a79880f1e2d3c4b5a69788f7e6d5c4b3a29181f2e3d4c5b6a7988 >"$d/ck"
    chmod 600 "$d/sk" "$d/ck"
}

big=$tmp/big
big_ready=0
# make_big: the part b sets, once.
make_big() {
    [ "$big_ready" = 1 ] && return 0
    if gen_sets "$big" "$big_n" "$client_n" 20240917; then big_ready=1; return 0; fi
    checks=$((checks + 1))
    fail "generating $big_n + $client_n values failed"
    return 1
}

# ------------------------------------------------------------ b. big set

part_b() {
    local d=$big np m mo L t0 r w S=(--key-file "$big/sk") C=(--key-file "$big/ck")
    make_big || return
    note "part b: $(wc -l <"$d/server.txt") server lines, $(wc -l <"$d/client.txt") client lines," \
        "$(cat "$d/want.raw.count") in the raw intersection"
    t0=$SECONDS
    run "big: shardpsi setup" 0 "$d/psi.err" "$psi" setup "${S[@]}" --input "$d/server.txt" \
        --structure raw --permutation "$d/ref.perm" --output "$d/ref.setup"
    note "part b: shardpsi setup took $((SECONDS - t0)) s"
    checks=$((checks + 1))
    sort -n "$d/ref.perm" | cmp -s - <(seq 0 $((big_n - 1))) ||
        fail "big: psi permutation is not a permutation of 0..$((big_n - 1))"
    for np in 1 2 4; do
        t0=$SECONDS
        hung=0
        L="big: shardpsi-mpi -np $np"
        run "$L setup" 0 "$d/np$np.err" mpi "$np" 300 setup "${S[@]}" --input "$d/server.txt" \
            --structure raw --permutation "$d/np$np.perm" --output "$d/np$np.setup" && {
            expect_same "$L setup" "$d/np$np.setup" "$d/ref.setup"
            expect_same "$L permutation" "$d/np$np.perm" "$d/ref.perm"
        }
        note "part b: shardpsi-mpi -np $np setup took $((SECONDS - t0)) s"
        rm -f "$d/np$np.setup" "$d/np$np.perm"
    done

    t0=$SECONDS
    run "big: shardpsi request" 0 "$d/psi.err" "$psi" request "${C[@]}" --input "$d/client.txt" \
        --output "$d/ref.req"
    run "big: psi count-only request" 0 "$d/psi.err" "$psi" request "${C[@]}" \
        --input "$d/client.txt" --count-only --output "$d/ref.creq"
    run "big: shardpsi response" 0 "$d/psi.err" "$psi" response "${S[@]}" --request "$d/ref.req" \
        --reveal --output "$d/ref.resp"
    run "big: psi count-only response" 0 "$d/psi.err" "$psi" response "${S[@]}" \
        --request "$d/ref.creq" --output "$d/ref.cresp"
    for m in rows indices count; do
        mo=() r=$d/ref.resp
        [ "$m" = indices ] && mo=(--indices)
        [ "$m" = count ] && mo=(--count-only) r=$d/ref.cresp
        run "big: shardpsi match $m" 0 "$d/psi.err" "$psi" match "${C[@]}" --input "$d/client.txt" \
            --setup "$d/ref.setup" --response "$r" "${mo[@]}" --output "$d/ref.$m" || continue
        w=$d/want.raw.$m
        [ "$m" = indices ] && w=$d/want.raw.idx
        expect_same "big: shardpsi match $m vs the plain comparison" "$d/ref.$m" "$w"
    done
    note "part b: shardpsi client steps took $((SECONDS - t0)) s"
    for np in 2 4; do
        t0=$SECONDS
        hung=0
        L="big: shardpsi-mpi -np $np"
        run "$L request" 0 "$d/np$np.err" mpi "$np" 180 request "${C[@]}" \
            --input "$d/client.txt" --output "$d/np$np.req" &&
            expect_same "$L request" "$d/np$np.req" "$d/ref.req"
        run "$L count-only request" 0 "$d/np$np.err" mpi "$np" 180 request "${C[@]}" \
            --input "$d/client.txt" --count-only --output "$d/np$np.creq" &&
            expect_same "$L count-only request" "$d/np$np.creq" "$d/ref.creq"
        run "$L response" 0 "$d/np$np.err" mpi "$np" 180 response "${S[@]}" \
            --request "$d/ref.req" --reveal --output "$d/np$np.resp" &&
            expect_same "$L response" "$d/np$np.resp" "$d/ref.resp"
        run "$L count-only response" 0 "$d/np$np.err" mpi "$np" 180 response "${S[@]}" \
            --request "$d/ref.creq" --output "$d/np$np.cresp" &&
            expect_same "$L count-only response" "$d/np$np.cresp" "$d/ref.cresp"
        for m in rows indices count; do
            mo=() r=$d/ref.resp
            [ "$m" = indices ] && mo=(--indices)
            [ "$m" = count ] && mo=(--count-only) r=$d/ref.cresp
            run "$L match $m" 0 "$d/np$np.err" mpi "$np" 180 match "${C[@]}" \
                --input "$d/client.txt" --setup "$d/ref.setup" --response "$r" "${mo[@]}" \
                --output "$d/np$np.$m" &&
                expect_same "$L match $m" "$d/np$np.$m" "$d/ref.$m"
        done
        note "part b: shardpsi-mpi -np $np client steps took $((SECONDS - t0)) s"
        rm -f "$d"/np"$np".*req "$d"/np"$np".*resp
    done
    rm -f "$d"/ref.*req "$d"/ref.*resp
}

# ------------------------------------------------------------ c. interop

part_c() {
    local d=$tmp/interop m mo w st setup mem
    local S=(--key-file "$d/sk") C=(--key-file "$d/ck")
    gen_sets "$d" 6000 2500 7 || { checks=$((checks + 1)); fail "interop: no inputs"; return; }
    # shardpsi-mpi server (setup, response) with a plain shardpsi client.
    run "interop: shardpsi-mpi -np 4 setup" 0 "$d/err" mpi 4 60 setup "${S[@]}" \
        --input "$d/server.txt" --structure raw --output "$d/m.setup"
    run "interop: shardpsi-mpi -np 2 gcs setup" 0 "$d/err" mpi 2 60 setup "${S[@]}" \
        --input "$d/server.txt" --structure gcs --num-client-inputs 2500 --output "$d/m.gsetup"
    run "interop: shardpsi request" 0 "$d/err" "$psi" request "${C[@]}" --input "$d/client.txt" \
        --output "$d/p.req"
    run "interop: shardpsi-mpi -np 2 response to psi" 0 "$d/err" mpi 2 60 response "${S[@]}" \
        --request "$d/p.req" --reveal --output "$d/m.resp"
    for m in rows indices; do
        mo=()
        [ "$m" = indices ] && mo=(--indices)
        w=$d/want.raw.$m
        [ "$m" = indices ] && w=$d/want.raw.idx
        run "interop: shardpsi match $m of shardpsi-mpi's setup and response" 0 "$d/err" "$psi" match \
            "${C[@]}" --input "$d/client.txt" --setup "$d/m.setup" --response "$d/m.resp" \
            "${mo[@]}" --output "$d/pm.$m" &&
            expect_same "interop: shardpsi match $m of shardpsi-mpi's messages vs the plain comparison" \
                "$d/pm.$m" "$w"
    done
    run "interop: shardpsi match --indices of shardpsi-mpi's gcs setup" 0 "$d/err" "$psi" match \
        "${C[@]}" --input "$d/client.txt" --setup "$d/m.gsetup" --response "$d/m.resp" \
        --indices --output "$d/pm.gidx" &&
        expect_same "interop: gcs --indices vs the plain comparison" "$d/pm.gidx" \
            "$d/want.member.idx"
    # shardpsi-mpi client (request) with a plain shardpsi server.
    run "interop: shardpsi setup" 0 "$d/err" "$psi" setup "${S[@]}" --input "$d/server.txt" \
        --structure raw --output "$d/p.setup"
    run "interop: shardpsi-mpi -np 4 request" 0 "$d/err" mpi 4 60 request "${C[@]}" \
        --input "$d/client.txt" --output "$d/m.req"
    run "interop: shardpsi-mpi -np 2 count-only request" 0 "$d/err" mpi 2 60 request "${C[@]}" \
        --input "$d/client.txt" --count-only --output "$d/m.creq"
    run "interop: shardpsi response to shardpsi-mpi" 0 "$d/err" "$psi" response "${S[@]}" \
        --request "$d/m.req" --reveal --output "$d/p.resp"
    run "interop: psi count-only response to shardpsi-mpi" 0 "$d/err" "$psi" response "${S[@]}" \
        --request "$d/m.creq" --output "$d/p.cresp"
    run "interop: shardpsi match of shardpsi-mpi's request" 0 "$d/err" "$psi" match "${C[@]}" \
        --input "$d/client.txt" --setup "$d/p.setup" --response "$d/p.resp" --indices \
        --output "$d/mp.idx" &&
        expect_same "interop: shardpsi-mpi request, shardpsi response: --indices" "$d/mp.idx" \
            "$d/want.raw.idx"
    run "interop: psi count of shardpsi-mpi's count-only request" 0 "$d/err" "$psi" match \
        "${C[@]}" --input "$d/client.txt" --setup "$d/p.setup" --response "$d/p.cresp" \
        --count-only --output "$d/mp.count" &&
        expect_same "interop: shardpsi-mpi count-only request, shardpsi response: count" \
            "$d/mp.count" "$d/want.raw.count"
    # shardpsi-mpi match at a budget of a few KiB (GCS, held whole: 256K):
    # rank 0 hands the matched indices to many sorted runs on disk (a
    # sixteenth of 4K: 16 a run),
    # reads them back in order and sends each rank its part in pieces; a
    # raw setup is read in windows on every rank.  The same rows and
    # indices, raw and GCS, and nothing left in the temporary directory.
    mkdir -p "$d/runs"
    run "interop: shardpsi-mpi gcs setup for the match" 0 "$d/err" "$psi" setup "${S[@]}" \
        --input "$d/server.txt" --structure gcs --num-client-inputs 2500 --output "$d/p.gsetup"
    for st in raw gcs; do
        for m in rows indices; do
            mo=()
            [ "$m" = indices ] && mo=(--indices)
            w=$d/want.raw.$m
            [ "$st" = gcs ] && w=$d/want.member.$m
            [ "$m" = indices ] && w=${w%.indices}.idx
            setup=$d/p.setup mem=4K
            [ "$st" = gcs ] && setup=$d/p.gsetup mem=256K
            run "interop: shardpsi-mpi -np 2 match $st $m at --memory $mem" 0 "$d/err" mpi 2 60 \
                match "${C[@]}" --input "$d/client.txt" --setup "$setup" \
                --response "$d/p.resp" "${mo[@]}" --memory $mem --temp-dir "$d/runs" \
                --output "$d/mm.$st.$m" &&
                expect_same "interop: shardpsi-mpi match $st $m at $mem vs the plain comparison" \
                    "$d/mm.$st.$m" "$w"
        done
    done
    checks=$((checks + 1))
    [ -z "$(ls -A "$d/runs")" ] || fail "shardpsi-mpi match at 4K: left $(ls -A "$d/runs")"
    # A shardpsi-mpi setup served by `shardpsi server --setup` to a plain `shardpsi client`
    # over loopback (PROTOCOL.md §15.5): rows and --indices.
    for m in rows indices; do
        mo=()
        [ "$m" = indices ] && mo=(--indices)
        w=$d/want.raw.$m
        [ "$m" = indices ] && w=$d/want.raw.idx
        # Emptied before the server starts: the port must not be read from
        # the previous iteration's server, which wrote the same file.
        : >"$d/srv.err"
        "$psi" server --no-tls --listen 127.0.0.1:0 --timeout 30 "${S[@]}" --setup "$d/m.setup" \
            --reveal 2>"$d/srv.err" >/dev/null </dev/null &
        local spid=$! port=
        for _ in $(seq 1 200); do
            port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$d/srv.err")
            [ -n "$port" ] && break
            kill -0 "$spid" 2>/dev/null || break
            sleep 0.05
        done
        checks=$((checks + 1))
        if [ -z "$port" ]; then
            fail "interop: shardpsi server --setup of shardpsi-mpi's setup did not start"
            sed -n '1,6s/^/    /p' "$d/srv.err"
            kill "$spid" 2>/dev/null
            wait "$spid" 2>/dev/null
            continue
        fi
        run "interop: shardpsi client $m against shardpsi server --setup (shardpsi-mpi setup)" 0 "$d/cli.err" \
            "$psi" client --no-tls --connect "127.0.0.1:$port" --timeout 30 "${C[@]}" \
            --input "$d/client.txt" "${mo[@]}" --output "$d/net.$m" &&
            expect_same "interop: shardpsi client $m of a shardpsi-mpi setup vs the plain comparison" \
                "$d/net.$m" "$w"
        # A server whose client never came waits for one forever: at most 60 s.
        for _ in $(seq 1 600); do
            kill -0 "$spid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$spid" 2>/dev/null
        wait "$spid"
        local src=$?
        checks=$((checks + 1))
        [ "$src" -eq 0 ] || fail "interop: shardpsi server --setup exited $src"
    done
    # Valid requests of another layout than the canonical one (PROTOCOL.md
    # §18.1): the reveal field after the elements, and an unknown varint
    # field (18 05) after the first element.  shardpsi-mpi must fall back to
    # decoding them whole and answer them as psi does.
    python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
assert d[:2] == b"\x08\x01"
open(sys.argv[2], "wb").write(d[2:] + b"\x08\x01")
open(sys.argv[3], "wb").write(d[:37] + b"\x18\x05" + d[37:])' \
        "$d/p.req" "$d/nc1.req" "$d/nc2.req"
    for v in nc1 nc2; do
        run "interop: shardpsi response to $v" 0 "$d/err" "$psi" response "${S[@]}" \
            --request "$d/$v.req" --reveal --output "$d/$v.p" &&
            expect_same "interop: $v is the canonical request's response" "$d/$v.p" \
                "$d/m.resp"
        run "interop: shardpsi-mpi -np 3 response to $v" 0 "$d/err" mpi 3 60 response "${S[@]}" \
            --request "$d/$v.req" --reveal --output "$d/$v.m" &&
            expect_same "interop: shardpsi-mpi -np 3 response to $v vs psi" "$d/$v.m" "$d/$v.p"
    done
    part_c_budget
    part_c_payloads
    part_c_payload_cells
}

# Every step past its budget (PROTOCOL.md §18.5): each rank masks its part
# a few values at a time into sorted runs in --temp-dir (4K: 8 values a
# chunk; 256K for GCS and Bloom, whose structure rank 0 holds: 512), rank 0
# merges them.  The same bytes as shardpsi's, under -np 1 and 3, and
# nothing left in the temporary directory.  Uses part_c's files.
part_c_budget() {
    local d=$tmp/interop np st L mem
    local S=(--key-file "$d/sk") C=(--key-file "$d/ck") B=(--temp-dir "$d/bruns")
    mkdir -p "$d/bruns"
    run "budget: shardpsi raw setup" 0 "$d/err" "$psi" setup "${S[@]}" --input "$d/server.txt" \
        --structure raw --permutation "$d/b.perm" --output "$d/b.raw"
    run "budget: shardpsi bloom setup" 0 "$d/err" "$psi" setup "${S[@]}" \
        --input "$d/server.txt" --structure bloom --num-client-inputs 2500 --output "$d/b.bloom"
    cp "$d/p.gsetup" "$d/b.gcs"
    run "budget: shardpsi count-only request" 0 "$d/err" "$psi" request "${C[@]}" \
        --input "$d/client.txt" --count-only --output "$d/b.creq"
    run "budget: shardpsi response" 0 "$d/err" "$psi" response "${S[@]}" --request "$d/p.req" \
        --reveal --output "$d/b.resp"
    run "budget: shardpsi count-only response" 0 "$d/err" "$psi" response "${S[@]}" \
        --request "$d/b.creq" --output "$d/b.cresp"
    for st in raw gcs bloom; do
        for m in rows indices count; do
            local mo=() resp=$d/b.resp
            [ "$m" = indices ] && mo=(--indices)
            [ "$m" = count ] && mo=(--count-only) resp=$d/b.cresp
            run "budget: shardpsi match $st $m" 0 "$d/err" "$psi" match "${C[@]}" \
                --input "$d/client.txt" --setup "$d/b.$st" --response "$resp" "${mo[@]}" \
                --output "$d/b.m.$st.$m"
        done
    done
    for np in 1 3; do
        L="budget: shardpsi-mpi -np $np"
        for st in raw gcs bloom; do
            local po=(--num-client-inputs 2500) mem=256K
            [ "$st" = raw ] && po=(--permutation "$d/bm.perm") mem=4K
            run "$L $st setup at $mem" 0 "$d/err" mpi "$np" 60 setup "${S[@]}" "${B[@]}" \
                --input "$d/server.txt" --structure "$st" "${po[@]}" --memory "$mem" \
                --progress --output "$d/bm.$st" &&
                expect_same "$L $st setup at $mem" "$d/bm.$st" "$d/b.$st" &&
                expect_grep "$L $st setup at $mem: spilled" "$np of $np ranks past their budget" \
                    "$d/err"
            [ "$st" = raw ] && expect_same "$L raw setup at 4K: permutation" "$d/bm.perm" \
                "$d/b.perm"
        done
        run "$L request at 4K" 0 "$d/err" mpi "$np" 60 request "${C[@]}" "${B[@]}" \
            --input "$d/client.txt" --memory 4K --output "$d/bm.req" &&
            expect_same "$L request at 4K" "$d/bm.req" "$d/p.req"
        run "$L count-only request at 4K" 0 "$d/err" mpi "$np" 60 request "${C[@]}" "${B[@]}" \
            --input "$d/client.txt" --count-only --memory 4K --output "$d/bm.creq" &&
            expect_same "$L count-only request at 4K" "$d/bm.creq" "$d/b.creq"
        run "$L response at 4K" 0 "$d/err" mpi "$np" 60 response "${S[@]}" "${B[@]}" \
            --request "$d/p.req" --reveal --memory 4K --output "$d/bm.resp" &&
            expect_same "$L response at 4K" "$d/bm.resp" "$d/b.resp" &&
            expect_grep "$L response at 4K: spilled" "$np of $np ranks past their budget" \
                "$d/err"
        run "$L count-only response at 4K" 0 "$d/err" mpi "$np" 60 response "${S[@]}" \
            "${B[@]}" --request "$d/b.creq" --memory 4K --output "$d/bm.cresp" &&
            expect_same "$L count-only response at 4K" "$d/bm.cresp" "$d/b.cresp"
        # Match: each rank's part of the response unmasked a chunk at a
        # time into runs, its part of the input counted and read again for
        # its rows, which reach rank 0 a piece at a time (raw at 4K; GCS
        # and Bloom, which every rank holds, at 256K).
        for st in raw gcs bloom; do
            mem=256K
            [ "$st" = raw ] && mem=4K
            for m in rows indices count; do
                local mo=() resp=$d/b.resp
                [ "$m" = indices ] && mo=(--indices)
                [ "$m" = count ] && mo=(--count-only) resp=$d/b.cresp
                run "$L match $st $m at $mem" 0 "$d/err" mpi "$np" 60 match "${C[@]}" "${B[@]}" \
                    --input "$d/client.txt" --setup "$d/b.$st" --response "$resp" "${mo[@]}" \
                    --memory "$mem" --progress --output "$d/bm.m.$st.$m" &&
                    expect_same "$L match $st $m at $mem" "$d/bm.m.$st.$m" "$d/b.m.$st.$m" &&
                    expect_grep "$L match $st $m at $mem: spilled" \
                        "$np of $np ranks past their budget" "$d/err"
            done
        done
        # A response to another input: its points checked a chunk at a
        # time, then refused as psi refuses it.
        run "$L match of another input's response at 4K" 1 "$d/err" mpi "$np" 60 match \
            "${C[@]}" "${B[@]}" --input "$d/server.txt" --setup "$d/b.raw" \
            --response "$d/b.resp" --memory 4K --output "$d/bm.m.other" &&
            expect_grep "$L match of another input's response at 4K: message" \
                "does not answer a request of the [0-9]* values" "$d/err"
        expect_no_output "$L match of another input's response at 4K" "$d/bm.m.other"
    done
    # Every rank holds a GCS or Bloom setup whole: past a quarter of its
    # budget, refused before it is read, with the budget it needs.
    run "budget: match of a gcs setup past the budget" 1 "$d/err" mpi 2 60 match "${C[@]}" \
        "${B[@]}" --input "$d/client.txt" --setup "$d/b.gcs" --response "$d/b.resp" \
        --memory 4K --output "$d/bm.m.g4" &&
        expect_grep "budget: match of a gcs setup past the budget: message" \
            "does not fit --memory 4096: each rank holds a gcs setup whole.*at least" "$d/err"
    expect_no_output "budget: match of a gcs setup past the budget" "$d/bm.m.g4"
    # A request of another layout is decoded whole by rank 0: refused when
    # that does not fit the budget, with the size it needs, and answered as
    # psi does when it fits.
    run "budget: non-canonical request past the budget" 1 "$d/err" mpi 2 60 response \
        "${S[@]}" "${B[@]}" --request "$d/nc1.req" --reveal --memory 4K --output "$d/bm.nc" &&
        expect_grep "budget: non-canonical request: message" \
            "is not of the canonical layout.*raise --memory to at least" "$d/err"
    expect_no_output "budget: non-canonical request past the budget" "$d/bm.nc"
    run "budget: non-canonical request within 1M" 0 "$d/err" mpi 2 60 response "${S[@]}" \
        "${B[@]}" --request "$d/nc1.req" --reveal --memory 1M --output "$d/bm.nc" &&
        expect_same "budget: non-canonical request within 1M" "$d/bm.nc" "$d/b.resp"
    # GCS and Bloom hold their structure on rank 0: refused up front past it.
    run "budget: gcs setup past the budget" 1 "$d/err" mpi 2 60 setup "${S[@]}" "${B[@]}" \
        --input "$d/server.txt" --structure gcs --num-client-inputs 2500 --memory 16K \
        --output "$d/bm.g16" &&
        expect_grep "budget: gcs setup past the budget: message" \
            "holds [0-9]* bytes on rank 0 while it is built" "$d/err"
    expect_no_output "budget: gcs setup past the budget" "$d/bm.g16"
    # A temporary directory that is not there: the first rank's message, no output.
    run "budget: missing --temp-dir" 1 "$d/err" mpi 2 60 setup "${S[@]}" --input \
        "$d/server.txt" --structure raw --memory 4K --temp-dir "$d/nowhere" \
        --output "$d/bm.nodir" &&
        expect_grep "budget: missing --temp-dir: message" "nowhere" "$d/err"
    expect_no_output "budget: missing --temp-dir" "$d/bm.nodir"
    checks=$((checks + 1))
    [ -z "$(ls -A "$d/bruns")" ] || fail "budget: left in --temp-dir: $(ls -A "$d/bruns")"
}

# ------------------------------------------------------------ d. faults

# descendants PID: the processes below PID.
descendants() {
    local p
    for p in $(pgrep -P "$1"); do
        echo "$p"
        descendants "$p"
    done
}

# has_env PID VAR=VALUE
has_env() {
    tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" | grep -qx -- "$2"
}

# tagged TAG: the processes whose environment holds TEST_MPI_TAG=TAG.
tagged() {
    local e
    for e in /proc/[0-9]*/environ; do
        tr '\0' '\n' 2>/dev/null <"$e" | grep -qx -- "TEST_MPI_TAG=$1" &&
            basename "$(dirname "$e")"
    done
}

# Payloads are data, never structure (PROTOCOL.md §22.1): the tables of
# tests/cli/payload_craft.py (any payload bytes) through shardpsi-mpi match
# --payloads under -np 1 and 3, held and past an 8K budget: honest payloads
# read back (Python's csv, tab-separated) as their values with formula-like
# cells neutralised, raw with --raw-cells, and byte for byte as shardpsi
# match writes them; a crafted payload or head (a line break, an unclosed
# quote, terminal escapes, a column short) ends the job naming the row,
# with no output.
part_c_payload_cells() {
    local d=$tmp/cells np mem raw c row what cli=$here/../cli
    mkdir -p "$d"
    run "cells: payload_craft.py" 0 "$d/err" python3 "$cli/payload_craft.py" "$d" || return
    local S=(--key-file "$d/sk" --suite ristretto255) C=(--key-file "$d/ck" --suite ristretto255)
    run "cells: setup" 0 "$d/err" "$psi" setup "${S[@]}" --input "$d/server.txt" --lines \
        --structure raw --output "$d/setup" &&
        run "cells: request" 0 "$d/err" "$psi" request "${C[@]}" --input "$d/client.txt" \
            --lines --output "$d/req" &&
        run "cells: response" 0 "$d/err" "$psi" response "${S[@]}" --request "$d/req" \
            --reveal --output "$d/resp" || return
    local M=(match "${C[@]}" --memory 64M --input "$d/client.txt" --lines --setup "$d/setup"
        --response "$d/resp")
    hung=0
    for raw in 0 1; do
        local R=()
        [ "$raw" = 1 ] && R=(--raw-cells)
        run "cells: shardpsi match, raw $raw" 0 "$d/err" "$psi" "${M[@]}" \
            --payloads "$d/honest.pay" "${R[@]}" --output "$d/psi$raw" || continue
        for np in 1 3; do
            mem=256M
            [ "$np" = 1 ] && mem=8K
            run "cells: -np $np --memory $mem, raw $raw" 0 "$d/err" mpi "$np" 60 "${M[@]}" \
                --payloads "$d/honest.pay" "${R[@]}" --memory "$mem" --output "$d/m$np.$raw" ||
                continue
            checks=$((checks + 1))
            python3 "$cli/payload_cells_check.py" "$d/m$np.$raw" lines "$raw" "$d" >"$d/chk" ||
                fail "cells: -np $np, raw $raw: not the rows with the payloads' cells: $(head -c 300 "$d/chk")"
            expect_same "cells: -np $np, raw $raw vs shardpsi match" "$d/m$np.$raw" "$d/psi$raw"
        done
    done
    while IFS=$'\t' read -r c row what; do
        case $c in c00 | c02 | c03 | c06 | c11) ;; *) continue ;; esac
        for np in 1 3; do
            mem=256M
            [ "$np" = 3 ] && mem=8K
            run "cells: -np $np, $what" 1 "$d/err" mpi "$np" 60 "${M[@]}" --payloads "$d/$c.pay" \
                --memory "$mem" --output "$d/o.$c.$np" || continue
            if [ "$row" = 0 ]; then
                expect_grep "cells: -np $np, $what: message" \
                    "the header line of its columns is refused" "$d/err"
            else
                expect_grep "cells: -np $np, $what: message" \
                    "the payload of matched row $row is refused" "$d/err"
            fi
            expect_no_output "cells: -np $np, $what" "$d/o.$c.$np"
        done
    done <"$d/crafted"
}

# shardpsi-mpi payloads (PROTOCOL.md §22.1): the same payload file as shardpsi
# payloads with the same key, input, columns, --pad-to and --salt, in every
# suite under -np 1 and 3; its table opened by shardpsi match --payloads
# gives the plain join; and its faults.
part_c_payloads() {
    local d=$tmp/payloads su np salt
    mkdir -p "$d"
    salt=$(printf '%064x' 20261205)
    python3 - "$d" <<'EOF'
import csv, sys
d = sys.argv[1]
with open(d + '/server.csv', 'w', newline='', encoding='utf-8') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['id', 'email', 'region'])
    for i in range(2000):
        w.writerow([i, 'user%d@example.org' % i, ['north', 'east, "west"', 'caf\u00e9', ''][i % 4]])
with open(d + '/client.txt', 'w') as f:
    f.writelines('user%d@example.org\n' % i for i in range(0, 5000, 7))
# Tab-separated, a cell quoted when it holds a tab, a quote or a line break.
with open(d + '/want.tsv', 'w', newline='', encoding='utf-8') as f:
    t = csv.writer(f, delimiter='\t', lineterminator='\n')
    for i in range(0, 2000, 7):
        t.writerow(['user%d@example.org' % i, i, ['north', 'east, "west"', 'caf\u00e9', ''][i % 4]])
EOF
    for su in openmined-p256 p256-sswu ristretto255; do
        local K=(--key-file "$d/sk.$su" --suite "$su") P=(--input "$d/server.csv" --column email
            --payload-columns id,region --pad-to 40 --salt "$salt")
        run "payloads $su: keygen" 0 "$d/err" "$psi" keygen --suite "$su" --output "$d/sk.$su"
        run "payloads $su: shardpsi payloads" 0 "$d/err" "$psi" payloads "${K[@]}" "${P[@]}" \
            --output "$d/ref.$su" || continue
        for np in 1 3; do
            run "payloads $su: shardpsi-mpi -np $np payloads" 0 "$d/err" mpi "$np" 60 payloads \
                "${K[@]}" "${P[@]}" --output "$d/m$np.$su" &&
                expect_same "payloads $su: shardpsi-mpi -np $np vs shardpsi" "$d/m$np.$su" \
                    "$d/ref.$su"
        done
    done
    # The MPI table joins: a line-mode client's values with the id and region.
    local S=(--key-file "$d/sk.ristretto255" --suite ristretto255)
    run "payloads: keygen" 0 "$d/err" "$psi" keygen --suite ristretto255 --output "$d/ck"
    run "payloads: setup" 0 "$d/err" "$psi" setup "${S[@]}" --input "$d/server.csv" \
        --column email --structure raw --output "$d/setup" &&
    run "payloads: request" 0 "$d/err" "$psi" request --key-file "$d/ck" --suite ristretto255 \
        --input "$d/client.txt" --output "$d/req" &&
    run "payloads: response" 0 "$d/err" "$psi" response "${S[@]}" --request "$d/req" --reveal \
        --output "$d/resp" &&
    run "payloads: match --payloads of the shardpsi-mpi table" 0 "$d/err" "$psi" match \
        --key-file "$d/ck" --suite ristretto255 --input "$d/client.txt" --setup "$d/setup" \
        --response "$d/resp" --payloads "$d/m3.ristretto255" --output "$d/joined" &&
        expect_same "payloads: the join through shardpsi-mpi's table vs the plain join" \
            "$d/joined" "$d/want.tsv"
    # shardpsi-mpi match --payloads (§22.4): every rank opens the payload file
    # where it lies and writes its own rows with their payloads; the same
    # rows as shardpsi match --payloads under 1 and 3 ranks, with each part
    # held or past its budget (its elements found again in the response's
    # records), against a raw and a GCS setup.
    run "payloads: gcs setup" 0 "$d/err" "$psi" setup "${S[@]}" --input "$d/server.csv" \
        --column email --structure gcs --num-client-inputs 800 --output "$d/gsetup"
    local st np mem
    for st in setup gsetup; do
        for np in 1 3; do
            for mem in 256M 48K; do
                run "payloads: shardpsi-mpi -np $np match $st --payloads --memory $mem" 0 \
                    "$d/err" mpi "$np" 60 match --key-file "$d/ck" --suite ristretto255 \
                    --input "$d/client.txt" --setup "$d/$st" --response "$d/resp" \
                    --payloads "$d/m3.ristretto255" --memory "$mem" \
                    --output "$d/mj.$st.$np.$mem" &&
                    expect_same "payloads: shardpsi-mpi -np $np match $st --payloads --memory $mem vs the plain join" \
                        "$d/mj.$st.$np.$mem" "$d/want.tsv"
            done
        done
    done
    # A damaged table, a table of another key: the row named, no output.
    python3 - "$d/m3.ristretto255" "$d/bad" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
t = b.index(b'\n') + 1
L = int.from_bytes(b[t + 12:t + 16], 'little')
n = int.from_bytes(b[t + 16:t + 24], 'little')
for j in range(n):
    b[t + 56 + j * (36 + L) + 20] ^= 1
open(sys.argv[2], 'wb').write(b)
EOF
    run "payloads: shardpsi-mpi match, a damaged table" 1 "$d/err" mpi 3 60 match \
        --key-file "$d/ck" --suite ristretto255 --input "$d/client.txt" --setup "$d/setup" \
        --response "$d/resp" --payloads "$d/bad" --output "$d/f5" &&
        expect_grep "payloads: shardpsi-mpi match, a damaged table: message" \
            "does not decrypt.*PSI_E_PAYLOAD_AUTH" "$d/err"
    expect_no_output "payloads: shardpsi-mpi match, a damaged table" "$d/f5"
    run "payloads: a table of another key" 0 "$d/err" "$psi" payloads --key-file "$d/ck" \
        --suite ristretto255 --input "$d/server.csv" --column email --payload-columns region \
        --output "$d/other"
    run "payloads: shardpsi-mpi match, a table of another key" 1 "$d/err" mpi 3 60 match \
        --key-file "$d/ck" --suite ristretto255 --input "$d/client.txt" --setup "$d/setup" \
        --response "$d/resp" --payloads "$d/other" --memory 8K --output "$d/f6" &&
        expect_grep "payloads: shardpsi-mpi match, a table of another key: message" \
            "has no payload for row" "$d/err"
    expect_no_output "payloads: shardpsi-mpi match, a table of another key" "$d/f6"
    # Faults: a value twice (its row named), an unknown column, a bad salt, an
    # input past a quarter of the budget; no output left.
    printf 'id,email,region\n1,a@x,n\n2,b@x,s\n3,a@x,e\n' >"$d/dup.csv"
    run "payloads: a value twice" 1 "$d/err" mpi 3 60 payloads "${S[@]}" --input "$d/dup.csv" \
        --column email --payload-columns region --output "$d/f1" &&
        expect_grep "payloads: a value twice: message" "row 3 is there twice" "$d/err"
    expect_no_output "payloads: a value twice" "$d/f1"
    run "payloads: an unknown column" 2 "$d/err" mpi 2 60 payloads "${S[@]}" \
        --input "$d/server.csv" --column email --payload-columns zone --output "$d/f2" &&
        expect_grep "payloads: an unknown column: message" "no column 'zone'" "$d/err"
    expect_no_output "payloads: an unknown column" "$d/f2"
    run "payloads: a bad salt" 2 "$d/err" mpi 2 60 payloads "${S[@]}" --input "$d/server.csv" \
        --column email --payload-columns region --salt abcd --output "$d/f3" &&
        expect_grep "payloads: a bad salt: message" "--salt: 2 bytes, not 32" "$d/err"
    run "payloads: past the budget" 1 "$d/err" mpi 2 60 payloads "${S[@]}" \
        --input "$d/server.csv" --column email --payload-columns region --memory 64K \
        --output "$d/f4" && expect_grep "payloads: past the budget: message" \
        "holds the input on every rank" "$d/err"
    expect_no_output "payloads: past the budget" "$d/f4"
}

part_d() {
    local f=$tmp/faults d=$tmp/faults/in
    mkdir -p "$f"
    gen_sets "$d" 3000 1000 11 || { checks=$((checks + 1)); fail "faults: no inputs"; return; }
    local S=(--key-file "$d/sk") C=(--key-file "$d/ck")

    # fault WHAT RC PATTERN OUTPUT NP CMD ARGS...: shardpsi-mpi fails with RC, says
    # "shardpsi-mpi CMD" and PATTERN, and leaves no OUTPUT.
    fault() {
        local what=$1 rc=$2 pat=$3 out=$4 np=$5 cmd=$6
        shift 6
        if run "$what" "$rc" "$f/err" mpi "$np" 30 "$cmd" "$@"; then
            expect_grep "$what: message" "shardpsi-mpi $cmd" "$f/err"
            expect_grep "$what: message" "$pat" "$f/err"
        fi
        expect_no_output "$what" "$out"
    }

    fault "missing input" 2 "nothere.txt" "$f/o1" 2 setup "${S[@]}" \
        --input "$f/nothere.txt" --structure raw --permutation "$f/p1" --output "$f/o1"
    expect_no_output "missing input: permutation" "$f/p1"
    fault "--input -" 2 "input" "$f/o2" 2 request "${C[@]}" --input - --output "$f/o2"
    awk 'BEGIN { print "id,name" } { sub(/\r$/, ""); print NR "," $0 }' "$d/client.txt" \
        >"$d/client.csv"
    fault "--column" 2 "column" "$f/o3" 2 request "${C[@]}" --input "$d/client.csv" \
        --column name --output "$f/o3"
    # The options' messages (app/) name shardpsi-mpi too.
    run "--memory below the least" 2 "$f/err" mpi 2 30 setup "${S[@]}" --input \
        "$d/server.txt" --structure raw --memory 1K --output "$f/o4" &&
        expect_grep "--memory below the least: message" \
            "^shardpsi-mpi: setup: --memory 1K: at least 4096 bytes" "$f/err"
    expect_no_output "--memory below the least" "$f/o4"
    fault "--association on match" 2 "run shardpsi match for the association table" \
        "$f/o5" 2 match "${C[@]}" --input "$d/client.txt" --setup "$f/none" \
        --response "$f/none" --association --permutation "$f/none" --output "$f/o5"
    # shardpsi's CSV guard (app/app_input.h): a header line is refused unless
    # --lines, also when rank 0's slice is empty (a file smaller than -np).
    fault "header line as lines" 2 "client.csv: looks like CSV (first line \"id,name\"); add --column NAME to read a column, or --lines" \
        "$f/g1" 2 request "${C[@]}" --input "$d/client.csv" --output "$f/g1"
    printf 'a,' >"$f/tiny.txt"
    fault "header line as lines, rank 0 empty" 2 "tiny.txt: looks like CSV (first line \"a,\")" \
        "$f/g2" 4 request "${C[@]}" --input "$f/tiny.txt" --output "$f/g2"
    if run "--lines: psi request" 0 "$f/err" "$psi" request "${C[@]}" --input "$d/client.csv" \
        --lines --output "$f/lines.req" &&
        run "--lines: shardpsi-mpi request" 0 "$f/err" mpi 2 30 request "${C[@]}" \
            --input "$d/client.csv" --lines --output "$f/lines.mpi.req"; then
        expect_same "--lines: shardpsi-mpi request as shardpsi's" "$f/lines.mpi.req" "$f/lines.req"
    fi
    cp "$d/sk" "$f/open.key"
    chmod 644 "$f/open.key"
    fault "key file readable by others" 2 "accessible to others" "$f/o4" 2 setup \
        --key-file "$f/open.key" --input "$d/server.txt" --structure raw --output "$f/o4"

    run "faults: shardpsi request" 0 "$f/err" "$psi" request "${C[@]}" --input "$d/client.txt" \
        --output "$f/good.req" || return
    head -c 100 "$f/good.req" >"$f/short.req"
    fault "truncated request" 1 "PSI_E_MSG_TRUNCATED" "$f/o5" 2 response "${S[@]}" \
        --request "$f/short.req" --reveal --output "$f/o5"
    # The last element replaced by 02 ff..ff: x is not below p
    # (PSI_E_POINT_X_RANGE), and it lies in the last rank's slice.
    { head -c -33 "$f/good.req"; printf '\002'; head -c 32 /dev/zero | tr '\0' '\377'; } \
        >"$f/bad.req"
    run "faults: shardpsi response to the bad point" 1 "$f/psi.err" "$psi" response "${S[@]}" \
        --request "$f/bad.req" --reveal --output "$f/o6" &&
        expect_grep "faults: shardpsi response to the bad point" "PSI_E_POINT_X_RANGE" "$f/psi.err"
    fault "bad point in rank 3's slice" 1 "rank 3" "$f/o6" 4 response "${S[@]}" \
        --request "$f/bad.req" --reveal --output "$f/o6"
    expect_grep "bad point in rank 3's slice: cause" "PSI_E_POINT_X_RANGE" "$f/err"
    # The same request past the budget (250 elements a rank, 8 a chunk): the
    # same message, its index counted in the slice as in memory.
    grep "error: rank 3" "$f/err" >"$f/bad.mem"
    if run "bad point in rank 3's spilled slice" 1 "$f/err" mpi 4 60 response "${S[@]}" \
        --request "$f/bad.req" --reveal --memory 4K --temp-dir "$f" --output "$f/o6"; then
        grep "error: rank 3" "$f/err" >"$f/bad.spill"
        expect_same "bad point in rank 3's spilled slice: the in-memory message" \
            "$f/bad.spill" "$f/bad.mem"
    fi
    expect_no_output "bad point in rank 3's spilled slice" "$f/o6"
    echo "an existing file" >"$f/o7"
    cp "$f/o7" "$f/o7.orig"
    run "bad point over an existing file" 1 "$f/err" mpi 4 60 response "${S[@]}" \
        --request "$f/bad.req" --reveal --output "$f/o7"
    expect_same "bad point over an existing file: untouched" "$f/o7" "$f/o7.orig"
    checks=$((checks + 1))
    ! ls "$f"/o7.tmp.* >/dev/null 2>&1 || fail "bad point over an existing file: tmp left"

    # Rank 1 killed during a setup of the big input.
    make_big || return
    local tag="kill-$$-$RANDOM" bg victim="" p i rc left
    TEST_MPI_TAG=$tag timeout 120 mpirun --oversubscribe -np 2 "$psi_mpi" setup "${S[@]}" \
        --input "$big/server.txt" --structure raw --permutation "$f/kill.perm" \
        --output "$f/kill.setup" >"$f/kill.out" 2>"$f/kill.err" </dev/null &
    bg=$!
    for i in $(seq 300); do
        victim=""
        local r0=0
        for p in $(descendants "$bg"); do
            has_env "$p" OMPI_COMM_WORLD_RANK=0 && r0=1
            [ -z "$victim" ] && has_env "$p" OMPI_COMM_WORLD_RANK=1 && victim=$p
        done
        [ -n "$victim" ] && [ "$r0" = 1 ] && break
        sleep 0.1
    done
    checks=$((checks + 1))
    if [ -z "$victim" ]; then
        fail "rank killed: rank 1 never appeared under mpirun"
    else
        sleep 3 # into the computation: ~25 s on 2 ranks for 1M values
        if ! kill -0 "$victim" 2>/dev/null; then
            fail "rank killed: rank 1 ended before it could be killed"
        else
            kill -9 "$victim"
        fi
    fi
    wait "$bg"
    rc=$?
    checks=$((checks + 1))
    if [ "$rc" -eq 124 ]; then
        fail "rank killed: mpirun still running after 120 s (hang)"
    elif [ "$rc" -eq 0 ]; then
        fail "rank killed: mpirun exited 0"
    fi
    expect_no_output "rank killed" "$f/kill.setup"
    expect_no_output "rank killed: permutation" "$f/kill.perm"
    sleep 1
    left=$(tagged "$tag" | tr '\n' ' ')
    checks=$((checks + 1))
    if [ -n "$left" ]; then
        fail "rank killed: processes left running: $left"
        # shellcheck disable=SC2086
        kill -9 $left 2>/dev/null
    fi
    note "rank killed: mpirun exit status $rc; stderr: $(grep -v '^[-]*$' "$f/kill.err" | head -c 300)"
}

t_start=$SECONDS
for part in a b c d; do
    case $parts in
    *"$part"*)
        t0=$SECONDS
        hung=0
        "part_$part"
        note "part $part: $((SECONDS - t0)) s"
        ;;
    esac
done
note "total: $((SECONDS - t_start)) s"

echo "test_mpi: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
