#!/usr/bin/env bash
# Runs the libFuzzer harnesses of fuzz/ (fuzz/README.md).
#
#   scripts/fuzz.sh [--seconds S] [--build DIR] [NAME...]
#
# Configures the fuzz build in DIR if it has none (default build-fuzz:
# clang-14, ASan + UBSan, the library instrumented for coverage), builds the
# harnesses, then runs each NAME (all by default: point request response
# setup server client frame perm prebuilt csv session payload cells) for S seconds
# (default 60), two at a time, on
# a copy of fuzz/corpus/NAME and fuzz/regressions/NAME in a temporary
# directory, so that runs never add files to the repository.  A crash,
# leak, timeout or out-of-memory input is copied into fuzz/findings/NAME/
# (ignored by git) and reported.  Prints one line per harness,
#   fuzz NAME: EXECS execs in T s, cov N, ft N, corpus N, K findings
# and at the end "N passed, M failed" (counted by scripts/test.sh).  Exit
# status 1 if a harness found something or failed to run.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

all=(point request response setup server client frame perm prebuilt csv session payload cells)
# The largest input each harness gets (fuzz/make-corpus.py keeps its seeds
# below the same limits).  server and client run scalar multiplications per
# element (35 bytes each), so theirs are kept small.
declare -A max_len=(
    [point]=256 [request]=65536 [response]=65536 [setup]=65536
    [server]=4096 [client]=8192 [frame]=65537
    [perm]=65536 [prebuilt]=65536 [csv]=65536 [session]=256 [payload]=4096
    [cells]=4096
)

seconds=60
build=build-fuzz
names=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --seconds) seconds=${2:?--seconds needs a value}; shift 2 ;;
    --seconds=*) seconds=${1#*=}; shift ;;
    --build) build=${2:?--build needs a value}; shift 2 ;;
    --build=*) build=${1#*=}; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "scripts/fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
    esac
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "scripts/fuzz.sh: --seconds must be a positive integer" >&2; exit 2; }
[[ ${#names[@]} -gt 0 ]] || names=("${all[@]}")
for n in "${names[@]}"; do
    [[ -n ${max_len[$n]:-} ]] || { echo "scripts/fuzz.sh: no harness '$n' (have: ${all[*]})" >&2; exit 2; }
done

if [[ ! -f $build/build.ninja ]]; then
    # -fno-sanitize-recover=all: a UBSan report stops the run like an ASan one.
    CC=${CC:-clang-14} meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Dbench=false --buildtype=debugoptimized \
        -Dc_args='-fsanitize=fuzzer-no-link -fno-sanitize-recover=all -gdwarf-4' >/dev/null ||
        { echo "fuzz: cannot configure $build"; echo "0 passed, ${#names[@]} failed"; exit 1; }
fi
targets=()
for n in "${names[@]}"; do targets+=("fuzz/fuzz_$n"); done
ninja -C "$build" "${targets[@]}" >/dev/null ||
    { echo "fuzz: cannot build the harnesses in $build"; echo "0 passed, ${#names[@]} failed"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/psi-fuzz.XXXXXX") || exit 1
trap '[[ -n ${FUZZ_KEEP_TMP:-} ]] || rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# One harness: the corpus copy, the run, the elapsed time and exit status.
run_one() {
    local n=$1 d=$tmp/$1 start
    mkdir -p "$d/corpus" "$d/artifacts"
    for src in "fuzz/corpus/$n" "fuzz/regressions/$n"; do
        [[ -d $src ]] || continue
        find "$src" -type f ! -name '.*' ! -name 'README*' -exec cp {} "$d/corpus/" \;
    done
    start=$(date +%s)
    "$build/fuzz/fuzz_$n" -max_total_time="$seconds" -max_len="${max_len[$n]}" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$d/artifacts/" \
        "$d/corpus" >"$d/log" 2>&1
    echo $? >"$d/rc"
    echo $(( $(date +%s) - start )) >"$d/elapsed"
}

# Two at a time (the machine has two cores).
running=0
for n in "${names[@]}"; do
    if [[ $running -ge 2 ]]; then
        wait -n
        running=$((running - 1))
    fi
    run_one "$n" &
    running=$((running + 1))
done
wait

# Reads a stat::NAME value from a log.
log_stat() { sed -n "s/^stat::$2: *//p" "$1" | tail -n 1; }

passed=0
failed=0
for n in "${names[@]}"; do
    d=$tmp/$n
    rc=$(cat "$d/rc" 2>/dev/null || echo 1)
    execs=$(log_stat "$d/log" number_of_executed_units)
    # the last status line: "#N DONE cov: C ft: F corp: K/..." (or pulse, NEW...)
    last=$(grep -E '^#[0-9]+' "$d/log" | grep ' cov: ' | tail -n 1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    findings=()
    while IFS= read -r f; do
        [[ -n $f ]] && findings+=("$f")
    done < <(find "$d/artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
        -o -name 'oom-*' \) | sort)
    echo "fuzz $n: ${execs:-0} execs in $(cat "$d/elapsed" 2>/dev/null || echo 0) s, cov ${cov:-0}, ft ${ft:-0}, corpus ${corp:-0}, ${#findings[@]} findings"
    if [[ ${#findings[@]} -gt 0 ]]; then
        mkdir -p "fuzz/findings/$n"
        for f in "${findings[@]}"; do
            cp "$f" "fuzz/findings/$n/"
            echo "  finding: fuzz/findings/$n/$(basename "$f")"
        done
        cp "$d/log" "fuzz/findings/$n/$(basename "${findings[0]}").log"
        echo "  log: fuzz/findings/$n/$(basename "${findings[0]}").log"
        grep -m 3 -E 'ERROR: |^fuzz: |runtime error' "$d/log" | sed 's/^/  /'
    fi
    if [[ $rc -ne 0 || ${#findings[@]} -gt 0 || -z $execs ]]; then
        failed=$((failed + 1))
        [[ ${#findings[@]} -gt 0 ]] || { echo "  the run failed (exit status $rc):"; tail -n 5 "$d/log" | sed 's/^/  /'; }
    else
        passed=$((passed + 1))
    fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
