# The shell helpers of the offline commands' tests (test_offline.sh,
# test_spill.sh), sourced with the script's arguments: $psi from the one
# argument, a temporary directory $tmp removed at exit, the check counters,
# and the checks themselves.
# shellcheck shell=bash
if [ $# -ne 1 ]; then
    echo "usage: $0 PSI_BINARY" >&2
    exit 2
fi
psi=$1
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
checks=0
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# run WHAT WANT_RC LOG CMD...: runs `shardpsi CMD` with stderr in LOG and checks
# its exit status.
run() {
    local what=$1 want=$2 log=$3 rc
    shift 3
    "$psi" "$@" 2>"$log" >/dev/null </dev/null
    rc=$?
    checks=$((checks + 1))
    if [ "$rc" -ne "$want" ]; then
        fail "$what: exit status $rc, expected $want"
        sed -n '1,6s/^/    /p' "$log"
        return 1
    fi
    return 0
}

expect_same() {
    checks=$((checks + 1))
    if ! cmp -s "$2" "$3"; then
        fail "$1: $2 and $3 differ"
        return 1
    fi
}

expect_grep() {
    checks=$((checks + 1))
    grep -q -- "$2" "$3" || { fail "$1: no '$2' in: $(head -c 400 "$3")"; return 1; }
}
