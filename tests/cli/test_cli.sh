#!/usr/bin/env bash
# Tests of the `shardpsi` command line tool: help and usage errors, `vectors
# check` on psi.js's sample vectors (vectors/reference/sample-vectors.json),
# on shardpsi's extra vectors (vectors/shardpsi-extra.json) and on the
# fixtures in tests/cli/fixtures/, small `shardpsi demo` runs, and small
# `shardpsi bench` runs without psi.js, also in the suites p256-sswu and
# ristretto255 with their vector files
# (tests/cli/test_bench_psijs.sh runs it with psi.js).
#
# Usage: tests/cli/test_cli.sh PSI_BINARY REPO_ROOT
# Prints one line per failed check and exits 1 if any check failed.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 PSI_BINARY REPO_ROOT" >&2
    exit 2
fi
psi=$1
root=$2
fixtures=$root/tests/cli/fixtures
sample=$root/vectors/reference/sample-vectors.json
extra=$root/vectors/shardpsi-extra.json

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
out=$tmp/stdout
err=$tmp/stderr
checks=0
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

show_output() {
    sed -n '1,15s/^/    stdout: /p' "$out"
    sed -n '1,15s/^/    stderr: /p' "$err"
}

# run WANT_RC ARGS...: runs psi with ARGS, keeps its output in $out and
# $err, and checks its exit code.  Returns 1 if the code differs.
run() {
    local want=$1 got
    shift
    checks=$((checks + 1))
    "$psi" "$@" >"$out" 2>"$err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "psi $*: exit code $got, expected $want"
        show_output
        return 1
    fi
    return 0
}

# has_out REGEX / has_err REGEX: the last run printed a matching line.
has_out() {
    checks=$((checks + 1))
    if ! grep -Eq -- "$1" "$out"; then
        fail "stdout of the last run has no line matching '$1'"
        show_output
    fi
}

has_err() {
    checks=$((checks + 1))
    if ! grep -Eq -- "$1" "$err"; then
        fail "stderr of the last run has no line matching '$1'"
        show_output
    fi
}

# no_out REGEX: the last run printed no matching line on stdout.
no_out() {
    checks=$((checks + 1))
    if grep -Eq -- "$1" "$out"; then
        fail "stdout of the last run has a line matching '$1'"
        show_output
    fi
}

empty_err() {
    checks=$((checks + 1))
    if [ -s "$err" ]; then
        fail "stderr of the last run is not empty"
        show_output
    fi
}

# ------------------------------------------------------------ help, usage

test_help() {
    local args
    for args in "--help" "-h" "help" "help help" "help vectors" "help demo" \
                "vectors --help" "vectors -h" "vectors check --help" \
                "demo --help" "demo -h" "help bench" "bench --help" "bench -h"; do
        # shellcheck disable=SC2086  # split the arguments on purpose
        run 0 $args && has_out '^Usage: shardpsi' && empty_err
    done
    run 0 --help && has_out 'vectors check' && has_out 'demo'
    run 0 demo --help && has_out '--server-size' && has_out '--count-only'
    has_out '--shards N' && has_out '--threads T' && has_out '--single-engine'
    run 0 bench --help && has_out '--values N' && has_out '--psijs MODE'
    has_out '--ops LIST' && has_out '--out-dir DIR' && has_out 'association'
    run 0 --help && has_out '^  bench '
    run 0 vectors check --help && has_out 'N passed, M failed'
    has_out '--shards N' && has_out '--threads T'
    run 0 --help && has_out '--shards N and --threads T'
    run 0 --version && has_out '^shardpsi [0-9]+\.[0-9]+' && empty_err
    has_out '^arithmetic: (AVX-512 IFMA|portable)'
    # --arith before the command; SHARDPSI_ARITH=portable does the same
    run 0 --arith portable --version && has_out '^arithmetic: portable$'
    SHARDPSI_ARITH=portable run 0 --version && has_out '^arithmetic: portable$'
    SHARDPSI_ARITH=portable run 0 --arith auto --version && has_out '^arithmetic: '
    if grep -q avx512ifma /proc/cpuinfo 2>/dev/null; then
        run 0 --arith auto --version && has_out '^arithmetic: AVX-512 IFMA'
    fi
    run 0 --help && has_out '--arith auto\|portable'
    # Every command that reads --input explains the CSV guard and --lines.
    for args in server client setup request match; do
        run 0 "$args" --help && has_out '^  --lines  ' && has_out 'looks like CSV \(a' &&
            has_out '^  --column NAME  '
    done
}

test_usage_errors() {
    local args
    run 2 && has_err 'missing command'
    run 2 --arith && has_err "--arith takes 'auto' or 'portable'"
    run 2 --arith fast demo && has_err "not 'fast'"
    run 2 bogus && has_err "unknown command 'bogus'"
    run 2 --bogus && has_err "unknown option '--bogus'"
    run 2 help bogus && has_err "unknown command 'bogus'"
    run 2 vectors && has_err 'missing subcommand'
    run 2 vectors bogus && has_err "unknown subcommand 'bogus'"
    run 2 vectors check && has_err 'no FILE'
    run 2 vectors check --bogus "$sample" && has_err "unknown option '--bogus'"
    for args in "--server-size abc" "--server-size -5" "--server-size 1.5" \
                "--client-size x" "--client-size 99999999999999999999999" \
                "--overlap 1.5" "--overlap -0.1" "--overlap abc" \
                "--fpr 0" "--fpr 1" "--fpr -1" "--fpr nan" "--fpr x" \
                "--structure cuckoo" "--seed x" "--seed -1" "--seed" \
                "--server-size" "--bogus" "extra" "--count-only=1" \
                "--server-size 10 --client-size 100 --overlap 0.5" \
                "--shards 0" "--threads 0" "--shards x" "--threads -2" \
                "--shards 4097" "--threads 257" "--shards 1.5" "--shards" \
                "--threads" "--single-engine --shards 2" \
                "--threads 2 --single-engine"; do
        # shellcheck disable=SC2086
        run 2 demo $args && has_err '^shardpsi: '
        no_out '.'
    done
    run 2 demo --shards 0 && has_err '^shardpsi: demo: --shards: 0 is not allowed, give 1 to 4096$'
    run 2 demo --threads 257 && has_err '^shardpsi: demo: --threads: 257 is larger than the limit 256$'
    run 2 demo --single-engine --threads 2 &&
        has_err '^shardpsi: demo: --single-engine excludes --shards and --threads$'
}

# Bad --shards and --threads values are usage errors before any file is read.
test_shard_usage_errors() {
    local args
    for args in "--shards 0" "--threads 0" "--shards x" "--threads x" \
                "--shards -1" "--shards 1.5" "--shards=" "--shards 4097" \
                "--threads 257" "--shards 99999999999999999999999"; do
        # shellcheck disable=SC2086
        run 2 vectors check $args "$sample" && has_err '^shardpsi: vectors check: --(shards|threads): '
        no_out '.'
    done
    run 2 vectors check --shards 0 "$sample" &&
        has_err '^shardpsi: vectors check: --shards: 0 is not allowed, give 1 to 4096$'
    run 2 vectors check --threads 0 "$sample" &&
        has_err '^shardpsi: vectors check: --threads: 0 is not allowed, give 1 to 256$'
    run 2 vectors check --shards 4097 "$sample" &&
        has_err '^shardpsi: vectors check: --shards: 4097 is larger than the limit 4096$'
    run 2 vectors check --shards x "$sample" &&
        has_err "^shardpsi: vectors check: --shards: 'x' is not a non-negative integer"
    run 2 vectors check --shards && has_err '^shardpsi: option --shards needs a value$'
    run 2 vectors check --shards 2 && has_err 'no FILE'
}

# ---------------------------------------------------------- vectors check

test_vectors_sample() {
    if [ ! -f "$sample" ]; then
        fail "sample vectors not found at $sample"
        return
    fi
    run 0 vectors check "$sample" && has_out '^[1-9][0-9]* passed, 0 failed$'
    no_out '^FAIL'
    run 0 vectors check --verbose "$sample" && has_out '^ok .*: basic/raw/reveal$'
    run 0 vectors check --quiet "$sample" && no_out '^ok '
}

test_vectors_file_errors() {
    local f
    run 2 vectors check "$fixtures/bad_syntax.json" &&
        has_err 'bad_syntax\.json: not valid JSON: .*line 9, column'
    has_out '^0 passed, 0 failed$'
    run 2 vectors check "$fixtures/wrong_format.json" &&
        has_err 'wrong_format\.json: unknown format "psi-wire-vectors/2"'
    run 2 vectors check "$fixtures/not_object.json" && has_err 'not a JSON object'
    run 2 vectors check "$fixtures/missing_cases.json" && has_err '"cases" is missing'
    run 0 vectors check "$fixtures/empty_cases.json" && has_out '^0 passed, 0 failed$'
    : >"$tmp/empty.json"
    run 2 vectors check "$tmp/empty.json" && has_err 'empty\.json: not valid JSON'
    printf '{"format": "psi-wire-vectors/1", "cases": []} x\n' >"$tmp/trailing.json"
    run 2 vectors check "$tmp/trailing.json" && has_err 'text after the value'
    printf '{"format": "psi-wire-vectors/1", "cases": [], "a\\u0000b": 1}\n' >"$tmp/nulkey.json"
    run 2 vectors check "$tmp/nulkey.json" && has_err 'key holds U\+0000'
    run 2 vectors check "$tmp/does-not-exist.json" && has_err 'does-not-exist\.json: cannot open'
    run 2 vectors check "$tmp" && has_err 'cannot read'
    # A file error elsewhere still fails the run, and good files still count.
    run 2 vectors check "$fixtures/bad_syntax.json" "$fixtures/nul_inside.json" &&
        has_out '^4 passed, 0 failed$'
    for f in bad_syntax wrong_format not_object missing_cases; do
        run 2 vectors check "$fixtures/$f.json"
        no_out '^[1-9][0-9]* passed'
    done
}

test_vectors_malformed_cases() {
    local name
    run 2 vectors check "$fixtures/malformed_cases.json" &&
        has_out '^1 passed, 13 failed$'
    for name in missing-request fpr-string key-odd-hex request-not-hex \
                unknown-structure key-zero key-too-large input-not-string \
                intersection-missing num-client-inputs-fraction \
                reveal-not-bool structure-nul; do
        has_err "malformed_cases\.json: cases\[[0-9]+\] \($name\): malformed: "
    done
    has_err 'cases\[13\]: malformed: case is not an object'
    has_err '\(key-zero\): malformed: client_key: '
    has_err '\(request-not-hex\): malformed: field "request": bad hex digit'
}

test_vectors_altered() {
    local f=$fixtures/altered_byte.json
    run 1 vectors check "$f" && has_out '^1 passed, 1 failed$'
    has_out '^FAIL .*/altered_byte\.json: trailing-byte/raw/reveal: response differs at byte 40 '
    no_out '^FAIL .*empty-server'
    f=$fixtures/altered_result.json
    run 1 vectors check "$f" && has_out '^0 passed, 4 failed$'
    has_out "^FAIL .*/altered_result\\.json: altered/intersection-order: intersection differs at position 1 "
    has_out "^FAIL .*/altered_result\\.json: altered/intersection-size: intersection_size: expected 10, got 9$"
    has_out "^FAIL .*/altered_result\\.json: altered/setup-length: server_setup differs at byte "
    has_out "^FAIL .*/altered_result\\.json: altered/request-point: request differs at byte 2 .*response: error -10 "
    # Altered at test time: one hex digit of the first stored response.
    if [ ! -f "$sample" ]; then
        fail "sample vectors not found at $sample"
    else
        sed '0,/"response": "0a21/s//"response": "0a20/' "$sample" >"$tmp/altered.json"
        if cmp -s "$sample" "$tmp/altered.json"; then
            fail "could not alter a response in $sample"
        else
            run 1 vectors check "$tmp/altered.json" &&
                has_out '^FAIL .*altered\.json: basic/raw/reveal: response differs at byte 1 '
            has_out '^[0-9]+ passed, [1-9][0-9]* failed$'
        fi
    fi
    run 1 vectors check "$fixtures/altered_byte.json" "$fixtures/nul_inside.json" &&
        has_out '^5 passed, 1 failed$'
}

test_vectors_nul() {
    run 0 vectors check --verbose "$fixtures/nul_inside.json" &&
        has_out '^4 passed, 0 failed$'
    has_out '^ok .*: nul-inside/raw/reveal$'
    has_out '^ok .*: trailing-byte-nul/gcs/reveal$'
    run 1 vectors check "$fixtures/nul_dropped.json" && has_out '^0 passed, 2 failed$'
    has_out '^FAIL .*: nul-dropped/gcs/reveal: request differs at byte '
    has_out '^FAIL .*: nul-cut/raw/reveal: request differs at byte '
}

# ------------------------------------------------- shardpsi-extra-vectors/1

test_vectors_extra() {
    local f=$fixtures/extra_altered.json name
    if [ ! -f "$extra" ]; then
        fail "extra vectors not found at $extra"
        return
    fi
    run 0 vectors check "$extra" && has_out '^[1-9][0-9]* passed, 0 failed$'
    no_out '^FAIL'
    empty_err
    run 0 vectors check --verbose "$extra" && has_out '^ok .*: worked-example$'
    has_out '^ok .*: duplicates-200$'
    has_out '^ok .*: point/identity-00$'
    has_out '^ok .*: setup_params/gcs/hash-range-overflow$'
    # Cases of both formats add up on the last line.
    run 0 vectors check "$extra" "$fixtures/nul_inside.json" &&
        has_out '^[1-9][0-9]* passed, 0 failed$'

    run 1 vectors check "$f" && has_out '^2 passed, 4 failed$'
    has_out '^FAIL .*/extra_altered\.json: altered/association-pair: association differs at pair 1 '
    has_out '^FAIL .*/extra_altered\.json: altered/permutation: permutation differs at position 3 '
    has_out '^FAIL .*/extra_altered\.json: altered/expected-error: psi_point_check: expected PSI_E_POINT_LENGTH, got PSI_E_POINT_IDENTITY$'
    has_out '^FAIL .*/extra_altered\.json: altered/intersection-error: psi_client_get_intersection_size: expected PSI_E_GCS_HASH_RANGE, got PSI_E_GCS_DIV$'
    no_out '^FAIL .*: (worked-example|point/identity-00):'

    # Altered at test time: the expected error of the first point case.
    sed '0,/"error": "PSI_E_POINT_IDENTITY"/s//"error": "PSI_E_POINT_PREFIX"/' "$extra" >"$tmp/extra.json"
    run 1 vectors check "$tmp/extra.json" &&
        has_out '^FAIL .*extra\.json: point/identity-00: psi_point_check: expected PSI_E_POINT_PREFIX, got PSI_E_POINT_IDENTITY$'
    has_out '^[0-9]+ passed, 1 failed$'
    # An error name the library does not know makes the file malformed.
    sed '0,/"error": "PSI_E_POINT_IDENTITY"/s//"error": "PSI_E_POINT_BOGUS"/' "$extra" >"$tmp/extra.json"
    run 2 vectors check "$tmp/extra.json" &&
        has_err 'rejection_cases\[[0-9]+\] \(point/identity-00\): malformed: field "error": "PSI_E_POINT_BOGUS" is not'
    has_out '^[0-9]+ passed, 1 failed$'

    run 2 vectors check "$fixtures/extra_malformed.json" && has_out '^2 passed, 8 failed$'
    for name in pair-not-pair permutation-negative; do
        has_err "extra_malformed\.json: association_cases\[[0-9]+\] \($name\): malformed: "
    done
    for name in unknown-error-name error-psi-ok unknown-operation fpr-lowercase-nan \
                server-key-zero point-missing; do
        has_err "extra_malformed\.json: rejection_cases\[[0-9]+\] \($name\): malformed: "
    done
    has_err '\(unknown-error-name\): malformed: field "error": "PSI_E_BOGUS" is not'
    has_err '\(error-psi-ok\): malformed: field "error": "PSI_OK" is not'

    printf '{"format": "shardpsi-extra-vectors/1", "association_cases": []}\n' >"$tmp/noreject.json"
    run 2 vectors check "$tmp/noreject.json" && has_err '"rejection_cases" is missing'
    printf '{"format": "shardpsi-extra-vectors/1", "association_cases": {}, "rejection_cases": []}\n' >"$tmp/assocobj.json"
    run 2 vectors check "$tmp/assocobj.json" && has_err '"association_cases" is not an array'
    printf '{"format": "shardpsi-extra-vectors/1", "association_cases": [], "rejection_cases": []}\n' >"$tmp/extraempty.json"
    run 0 vectors check "$tmp/extraempty.json" && has_out '^0 passed, 0 failed$'
}

# ------------------------------------------------------ sharded vectors

# same_sharded FILE: `vectors check --shards 3 FILE` gives the exit code and
# the output of the single engine, apart from its "sharded:" line and the
# psi_shards_ names of the calls.  (Passing vector files on N = 1..8 shards
# are the 'shard' suite of tests/cli/meson.build.)
same_sharded() {
    local f=$1 rc1 rc3
    checks=$((checks + 1))
    "$psi" vectors check "$f" >"$tmp/single.out" 2>"$tmp/single.err"
    rc1=$?
    "$psi" vectors check --shards 3 "$f" >"$out" 2>"$err"
    rc3=$?
    if [ "$rc1" -ne "$rc3" ]; then
        fail "vectors check --shards 3 $f: exit code $rc3, single engine $rc1"
        show_output
        return
    fi
    if ! head -n 1 "$out" | grep -Eq '^sharded: 3 shards, [1-3] threads?$'; then
        fail "vectors check --shards 3 $f: no 'sharded: 3 shards' first line"
        show_output
        return
    fi
    sed -e 1d -e 's/psi_shards_/psi_/' "$out" >"$tmp/sharded.out"
    if ! cmp -s "$tmp/single.out" "$tmp/sharded.out" ||
       ! cmp -s "$tmp/single.err" "$err"; then
        fail "vectors check --shards 3 $f: output differs from the single engine"
        diff "$tmp/single.out" "$tmp/sharded.out" | sed -n '1,15s/^/    /p'
        diff "$tmp/single.err" "$err" | sed -n '1,15s/^/    /p'
    fi
}

# The payload vector file (PROTOCOL.md §22): every table and damaged table,
# on one engine and on shards; a changed table byte and a changed expected
# error each fail their case.
test_vectors_payloads() {
    local pay=$root/vectors/shardpsi-payloads.json
    run 0 vectors check "$pay" && has_out '^36 passed, 0 failed$'
    run 0 vectors check --shards 5 --threads 2 "$pay" && has_out '^36 passed, 0 failed$'
    python3 - "$pay" "$tmp/pay-altered.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = d['cases'][0]['table']
d['cases'][0]['table'] = t[:-2] + ('00' if t[-2:] != '00' else '01')
d['tampered'][0]['error'] = 'PSI_E_PAYLOAD_FORMAT' if d['tampered'][0]['error'] != 'PSI_E_PAYLOAD_FORMAT' else 'PSI_E_PAYLOAD_ORDER'
json.dump(d, open(sys.argv[2], 'w'))
EOF
    run 1 vectors check "$tmp/pay-altered.json" && has_out '^34 passed, 2 failed$'
    has_out '^FAIL .*pay-altered\.json: basic: table: .* differing from the stored'
    has_out '^FAIL .*pay-altered\.json: .*: gave PSI_E_[A-Z_]*, expected PSI_E_PAYLOAD_'
}

test_vectors_sharded() {
    local f
    for f in altered_byte altered_result extra_altered extra_malformed \
             malformed_cases nul_dropped nul_inside bad_syntax; do
        same_sharded "$fixtures/$f.json"
    done
    run 1 vectors check --shards 3 "$fixtures/extra_altered.json" &&
        has_out '^FAIL .*: altered/intersection-error: psi_shards_client_get_intersection_size: expected PSI_E_GCS_HASH_RANGE, got PSI_E_GCS_DIV$'
    run 0 vectors check --threads 1 "$fixtures/nul_inside.json" &&
        has_out '^sharded: 1 shard, inline \(no worker thread\)$'
    has_out '^4 passed, 0 failed$'
    run 0 vectors check --shards 2 --threads 2 --verbose "$fixtures/nul_inside.json" &&
        has_out '^sharded: 2 shards, 2 threads$'
    has_out '^ok .*: nul-inside/raw/reveal$'
}

# ------------------------------------------------------------------- demo

# demo_size S: the intersection size the demo must print for structure S.
# Raw is exact.  The demo runs under fresh keys, and a Bloom filter gives a
# false positive in about 1 run of 550 at these sizes (PROTOCOL.md §12.8,
# item 2), so GCS and Bloom may print more; the demo itself checks that
# every true match is there and the false positives are within the limit
# ("result: OK"), and prints the plain count, which must be 150.
demo_size() {
    if [ "$1" = raw ]; then
        has_out '^intersection size: 150$'
    else
        has_out '^intersection size: 15[0-5]$'
    fi
    has_out '^expected \(plain comparison\): 150, false positives: [0-5] \(allowed [05]\)$'
}

test_demo() {
    local s
    for s in raw gcs bloom_filter; do
        run 0 demo --server-size 2000 --client-size 300 --structure "$s" && demo_size "$s"
        has_out '^result: OK$'
        run 0 demo --server-size 2000 --client-size 300 --structure "$s" --count-only &&
            demo_size "$s"
        has_out '^result: OK$'
    done
    run 0 demo --server-size 200 --client-size 50 --overlap 1 --structure raw --seed 9 &&
        has_out '^intersection size: 50$'
    run 0 demo --server-size=200 --client-size=50 --overlap=0 --seed=3 &&
        has_out '^intersection size: 0$'
    run 0 demo --server-size 0 --client-size 0 --structure bloom_filter &&
        has_out '^intersection size: 0$'
    has_out '^peak memory: [0-9]+\.[0-9] MiB \(VmHWM\)$'
}

# Past its budget the demo writes the same sets to nameless files and runs
# the offline steps on them: the same counts, checked against how the sets
# are drawn; nothing is left in --temp-dir.
test_demo_spill() {
    local s d="$tmp/demo-spill"
    mkdir -p "$d"
    for s in raw gcs bloom_filter; do
        run 0 demo --server-size 2000 --client-size 300 --structure "$s" --memory 128K \
            --temp-dir "$d" --threads 2 &&
            has_out '^past the budget \(--memory 131072\): the sets and messages in nameless files in '
        has_out '^server setup +2000 values +[0-9]+ bytes '
        has_out '^client intersection +300 values '
        if [ "$s" = raw ]; then has_out '^intersection size: 150$'
        else has_out '^intersection size: 15[0-5]$'; fi
        has_out '^expected \(by how the sets are drawn\): 150, false positives: [0-5] \(allowed [05]\)$'
        has_out '^result: OK$'
    done
    run 0 demo --server-size 2000 --client-size 300 --structure raw --count-only \
        --memory 64K --temp-dir "$d" && has_out '^intersection size: 150$'
    has_out '^result: OK$'
    run 0 demo --server-size 300 --client-size 300 --overlap 1 --structure raw --memory 64K \
        --temp-dir "$d" && has_out '^intersection size: 300$'
    [ -z "$(ls -A "$d")" ] || fail "demo past its budget left files in --temp-dir: $(ls "$d")"
    # The sets are the same in memory: the plain comparison finds what the
    # drawing says.
    run 0 demo --server-size 300 --client-size 300 --overlap 1 --structure raw &&
        has_out '^expected \(plain comparison\): 300, '
    run 1 demo --server-size 2000 --client-size 300 --memory 64K --temp-dir "$tmp/none" &&
        has_err "^shardpsi: demo: temporary file: temporary directory $tmp/none: cannot create a file: No such file or directory$"
    run 2 demo --server-size 2000 --client-size 300 --memory 64K --single-engine &&
        has_err '^shardpsi: demo: --single-engine holds both sets in memory, and 2300 values do not fit --memory 65536 at 256 bytes a value: '
    run 2 demo --memory 1x && has_err '^shardpsi: demo: --memory 1x: not a size'
}

test_demo_sharded() {
    local s
    for s in raw gcs; do
        run 0 demo --server-size 2000 --client-size 300 --structure "$s" \
            --threads 2 --shards 5 && has_out '^parties: server and client each on 5 shards, 2 threads, made in '
        demo_size "$s"
        has_out '^server setup +2000 values .* ms '
        has_out '^result: OK$'
    done
    run 0 demo --server-size 500 --client-size 100 --count-only --shards 3 --threads 1 &&
        has_out '^parties: .* each on 3 shards, inline \(no worker thread\), made in '
    has_out '^intersection size: 50$'
    run 0 demo --server-size 500 --client-size 100 --single-engine &&
        has_out '^parties: server and client each on a single engine, made in '
    has_out '^result: OK$'
    # The default is sharded, a thread per online CPU and 4 shards a thread.
    run 0 demo --server-size 500 --client-size 100 && has_out '^parties: .* each on [0-9]+ shards?, '
    no_out 'single engine'
}

# ------------------------------------------------------------------ bench

# holds WHAT COMMAND...: the command succeeds, else WHAT is reported.
holds() {
    local what=$1
    shift
    checks=$((checks + 1))
    if ! "$@" >/dev/null 2>&1; then
        fail "$what"
        return 1
    fi
    return 0
}

# run_no_path WANT_RC ARGS...: as run, but psi gets a PATH where it finds
# neither openssl nor node.
run_no_path() {
    local want=$1 got
    shift
    checks=$((checks + 1))
    PATH=/nonexistent "$psi" "$@" >"$out" 2>"$err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "PATH=/nonexistent psi $*: exit code $got, expected $want"
        show_output
        return 1
    fi
    return 0
}

# bench_json FILE OP...: FILE is JSON with exactly these ops, in order, each
# with a median of every C column (without python3: the ops are named).
bench_json() {
    local f=$1 op
    shift
    if ! command -v python3 >/dev/null; then
        for op in "$@"; do
            grep -Eq "\"op\":[[:space:]]*\"$op\"" "$f" || return 1
        done
        return 0
    fi
    python3 - "$f" "$@" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
ops = [o["op"] for o in j["ops"]]
assert ops == sys.argv[2:], ops
for o in j["ops"]:
    m = o["median"]
    for k in ("S", "one_thread", "shards4_t1", "all_cores", "one_thread_per_S"):
        assert isinstance(m[k], (int, float)) and m[k] > 0, (o["op"], k, m[k])
    assert len(o["rounds"]) == j["rounds"]
assert j["machine"]["online_cpus"] >= 1 and j["values"] > 0
EOF
}

test_bench() {
    local d=$tmp/bench op
    local all="setup_raw setup_gcs request response intersection association"
    # Short S measurements keep the test quick; the figures do not matter.
    run 0 bench --values 200 --psijs off --s-seconds 0.05 --out-dir "$d" &&
        has_out '^shardpsi bench: shardpsi [0-9.]+, 200 values per side \(100 shared\), 1 round$'
    has_out '^psi.js: skipped: off \(--psijs off\)$'
    has_out '^(cross-check: openssl speed -seconds 2 ecdhp256: [0-9,]+ ECDH/s|cross-check: openssl speed not run: .+)$'
    has_out '^op +S +1 thread +1t/S +shards4t1 +/1t +all cores +/1t +psi\.js '
    for op in $all; do
        has_out "^$op +[0-9,]+ +[0-9,]+ +[0-9.]+ +[0-9,]+ +[0-9.]+ +[0-9,]+ +[0-9.]+ +- +- +- "
        has_err "^$op round 1/1: (S [0-9,]+ ECDH/s|1 thread [0-9,]+ values/s|shards 4, 1 thread [0-9,]+ values/s|all cores [0-9,]+ values/s) \([0-9.]+ s\)$"
    done
    holds "bench.txt differs from the table on stdout" cmp "$out" "$d/bench.txt"
    # shellcheck disable=SC2086
    holds "bench.json lacks an op or a figure" bench_json "$d/bench.json" $all
    holds "bench.svg does not start with <svg" grep -q '^<svg ' "$d/bench.svg"
    for op in $all; do
        holds "bench.svg lacks $op" grep -q ">$op</text>" "$d/bench.svg"
    done
    holds "bench.svg lacks the S line" grep -q 'S (ECDH/s, 1 core)' "$d/bench.svg"
    holds "bench.svg does not end with </svg>" sh -c "tail -n 1 '$d/bench.svg' | grep -qx '</svg>'"

    # --ops: the others are left out; missing inputs are made untimed.
    # Without openssl on PATH the cross-check is skipped with a note.
    run_no_path 0 bench --values 60 --rounds 3 --psijs off --ops association,request \
        --s-seconds 0.02 --threads 1 --out-dir "$d/ops" &&
        has_out '^cross-check: openssl speed not run: no openssl program on PATH$'
    has_out '^request +[0-9,]+ ' && has_out '^association +[0-9,]+ ' && has_out '3 rounds \(medians\)$'
    no_out '^(setup_raw|setup_gcs|response|intersection) '
    has_err '^association: making its input with setup_raw \(untimed\)$'
    has_err '^association: making its input with response \(untimed\)$'
    has_err '^request round 3/3: all cores '
    holds "bench.json (--ops) is not request, association" \
        bench_json "$d/ops/bench.json" request association

    # psi.js unavailable: skipped with a reason by default, an error when on.
    run_no_path 0 bench --values 10 --ops setup_raw --s-seconds 0.02 \
        --node "$tmp/no-node" --out-dir "$d/auto" &&
        has_out "^psi.js: skipped: --node $tmp/no-node is not an executable file$"
    run 2 bench --values 10 --psijs on --node "$tmp/no-node" --out-dir "$d/on" &&
        has_err '^shardpsi: bench: --psijs on, but psi.js is unavailable: --node '
    run 2 bench --values 10 --psijs on --psijs-script "$tmp/none.mjs" --out-dir "$d/on" &&
        has_err "psi.js is unavailable: cannot read the script $tmp/none.mjs: "
    holds "--psijs on without psi.js wrote bench.json" test ! -e "$d/on/bench.json"
}

test_bench_usage_errors() {
    local args
    for args in "--values 0" "--values 10000001" "--values x" "--values -1" \
                "--values 1.5" "--values" "--rounds 0" "--rounds 1001" "--rounds x" \
                "--threads 0" "--threads 257" "--ops bogus" "--ops setup_raw,,request" \
                "--ops=" "--ops setup_raw," "--ops" "--psijs maybe" "--psijs" \
                "--s-seconds 0" "--s-seconds 11" "--s-seconds x" "--seed -1" \
                "--out-dir=" "--node=" "--bogus" "extra"; do
        # shellcheck disable=SC2086
        run 2 bench $args && has_err '^shardpsi: '
        no_out '.'
    done
    run 2 bench --values 0 && has_err '^shardpsi: bench: --values: 0 is not allowed, give 1 to 10000000$'
    run 2 bench --values 10000001 &&
        has_err '^shardpsi: bench: --values: 10000001 is larger than the limit 10000000$'
    run 2 bench --values 5000000 --psijs off &&
        has_err '^shardpsi: bench: a GCS setup for 5000000 client values at fpr 1e-06 overflows its hash range'
    run 2 bench --ops setup_raw,bogus &&
        has_err "^shardpsi: bench: --ops: unknown op 'bogus' \(setup_raw, setup_gcs, request, response, intersection, association\)$"
    run 2 bench --psijs maybe && has_err "^shardpsi: bench: --psijs: unknown mode 'maybe' \(auto, on or off\)$"
    run 2 bench --bogus && has_err "^shardpsi: bench: unknown option '--bogus' \(see 'shardpsi bench --help'\)$"
    run 2 bench --out-dir "$sample/x" --values 5 --psijs off && has_err '^shardpsi: bench: cannot create '
}

# ---------------------------------------------------------------- suites

# The suites p256-sswu and ristretto255 (PROTOCOL.md §16): their vector
# files, checked in the suite each file names; small demo and bench runs.
test_suites() {
    local f su d=$tmp/bench-suites
    for su in p256-sswu ristretto255; do
        f=$root/vectors/shardpsi-$su.json
        if [ ! -f "$f" ]; then
            fail "suite vectors not found at $f"
            continue
        fi
        run 0 vectors check "$f" && has_out '^[1-9][0-9]* passed, 0 failed$'
        no_out '^FAIL'
        run 0 vectors check --shards 3 --threads 2 "$f" && has_out '^[1-9][0-9]* passed, 0 failed$'
        # Without its "suite" the file is read as openmined-p256 and fails.
        grep -v '^  "suite": ' "$f" >"$tmp/nosuite-$su.json"
        run 1 vectors check "$tmp/nosuite-$su.json" && has_out '^FAIL .*: basic/raw/reveal: '
        has_out '^0 passed, [1-9][0-9]* failed$'
    done
    f=$root/vectors/shardpsi-ristretto255.json
    if [ -f "$f" ]; then
        sed 's/^  "suite": "ristretto255"/  "suite": "p256-sswu"/' "$f" >"$tmp/othersuite.json"
        run 1 vectors check "$tmp/othersuite.json" && has_out '^0 passed, [1-9][0-9]* failed$'
        sed 's/^  "suite": "ristretto255"/  "suite": "p384"/' "$f" >"$tmp/badsuite.json"
        run 2 vectors check "$tmp/badsuite.json" &&
            has_err 'badsuite\.json: unknown suite "p384" \(openmined-p256, p256-sswu or ristretto255\)$'
        sed 's/^  "suite": "ristretto255"/  "suite": 2/' "$f" >"$tmp/numsuite.json"
        run 2 vectors check "$tmp/numsuite.json" && has_err '"suite" is not a string$'
    fi
    printf '{"format": "psi-wire-vectors/1", "suite": "openmined-p256", "cases": []}\n' \
        >"$tmp/omsuite.json"
    run 0 vectors check "$tmp/omsuite.json" && has_out '^0 passed, 0 failed$'

    for su in p256-sswu ristretto255; do
        run 0 demo --server-size 400 --client-size 100 --structure raw --suite "$su" &&
            has_out "^shardpsi demo: .*, suite $su$" && has_out '^intersection size: 50$'
        has_out '^result: OK$'
        run 0 demo --server-size 400 --client-size 100 --count-only --single-engine \
            --suite "$su" && has_out '^intersection size: 5[0-5]$' && has_out '^result: OK$'
    done
    run 2 demo --suite p384 &&
        has_err "^shardpsi: demo: --suite: unknown suite 'p384' \(openmined-p256, p256-sswu or ristretto255\)$"
    run 0 demo --help && has_out '^  --suite NAME '

    # One suite: its name in the report and bench.json; all: a table by suite.
    run_no_path 0 bench --values 40 --psijs off --s-seconds 0.02 --threads 1 \
        --ops request,response --suite ristretto255 --out-dir "$d/one" &&
        has_out '^suite: ristretto255$' && has_out '^psi.js: skipped: off'
    holds "bench.json lacks the suite" grep -q '"suite":[[:space:]]*"ristretto255"' \
        "$d/one/bench.json"
    run_no_path 0 bench --values 40 --psijs auto --node "$tmp/no-node" --s-seconds 0.02 \
        --threads 1 --ops setup_raw,request,response,intersection --suite all \
        --out-dir "$d/all" && has_out '^values/s by suite, 40 values per side'
    for su in openmined-p256 p256-sswu ristretto255; do
        has_out "^suite: $su$"
        has_out "^$su +[0-9,]+ / [0-9,]+ +[0-9,]+ / [0-9,]+ +[0-9,]+ / [0-9,]+ +[0-9,]+ / [0-9,]+$"
        holds "bench --suite all: no $su/bench.json" \
            bench_json "$d/all/$su/bench.json" setup_raw request response intersection
    done
    has_out "^psi.js: skipped: psi.js has no suite ristretto255$"
    holds "bench --suite all: no suites.txt" grep -q '^ristretto255 ' "$d/all/suites.txt"
    run 2 bench --suite p256-sswu --psijs on &&
        has_err '^shardpsi: bench: --psijs on needs the suite openmined-p256'
    run 2 bench --suite ristretto255,nope && has_err "^shardpsi: bench: --suite: unknown suite 'nope'"
    run 2 bench --suite ristretto255,ristretto255 && has_err 'given twice'
    run 0 bench --help && has_out '^  --suite LIST '
    run 0 --help && has_out '--suite NAME'
}

test_help
test_usage_errors
test_shard_usage_errors
test_vectors_sample
test_vectors_file_errors
test_vectors_malformed_cases
test_vectors_altered
test_vectors_nul
test_vectors_extra
test_vectors_sharded
test_vectors_payloads
test_demo
test_demo_spill
test_demo_sharded
test_bench_usage_errors
test_bench
test_suites

echo "test_cli: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
