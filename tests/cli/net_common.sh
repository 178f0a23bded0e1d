# The shell helpers of the network tests (test_net.sh, test_tls.sh), sourced
# after $psi is set: a temporary directory $tmp removed at exit with every
# process in $pids, the check counters, and the checks themselves.
# shellcheck shell=bash
tmp=$(mktemp -d) || exit 2
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
checks=0
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# show FILE...: the first lines of files, for a failure's context.
show() {
    for f in "$@"; do sed -n "1,12s|^|    $(basename "$f"): |p" "$f"; done
}

# start_server LOG ARGS...: starts `shardpsi server --no-tls --listen 127.0.0.1:0
# ARGS` (without --no-tls when $start_tls is set) in
# the background with stderr in LOG, waits for its "listening on" line and
# sets $port and $spid.  Returns 1 if it did not come up.
start_server() {
    local log=$1
    shift
    local plain=(--no-tls)
    [ -n "${start_tls:-}" ] && plain=()
    # Emptied here, not by the child's redirect: the loop below must never
    # read the port of an earlier server that wrote the same LOG.
    : >"$log"
    "$psi" server "${plain[@]}" --listen 127.0.0.1:0 --timeout 20 "$@" 2>"$log" >/dev/null \
        <"${server_stdin:-/dev/null}" &
    spid=$!
    pids+=("$spid")
    port=
    for _ in $(seq 1 200); do
        port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
        [ -n "$port" ] && return 0
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.05
    done
    fail "server $* did not start"
    show "$log"
    return 1
}

# wait_pid PID: waits at most 60 s for PID and sets $rc to its exit code
# (124 when it had to be killed).
wait_pid() {
    local p=$1
    for _ in $(seq 1 600); do
        kill -0 "$p" 2>/dev/null || { wait "$p" 2>/dev/null; rc=$?; return 0; }
        sleep 0.1
    done
    kill -9 "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    rc=124
}

# expect_rc WHAT WANT GOT LOG...: checks an exit code.
expect_rc() {
    checks=$((checks + 1))
    if [ "$2" != "$3" ]; then
        fail "$1: exit code $3, expected $2"
        shift 3
        show "$@"
        return 1
    fi
    return 0
}

# expect_grep WHAT PATTERN FILE: checks that FILE holds PATTERN (grep -E).
expect_grep() {
    checks=$((checks + 1))
    if ! grep -Eq -- "$2" "$3"; then
        fail "$1: '$2' not in $(basename "$3")"
        show "$3"
        return 1
    fi
    return 0
}

# expect_fixed WHAT TEXT FILE: checks that FILE holds TEXT (grep -F).
expect_fixed() {
    checks=$((checks + 1))
    if ! grep -Fq -- "$2" "$3"; then
        fail "$1: '$2' not in $(basename "$3")"
        show "$3"
        return 1
    fi
    return 0
}

# expect_same WHAT GOT WANT: checks that two files are equal.
expect_same() {
    checks=$((checks + 1))
    if ! cmp -s "$2" "$3"; then
        fail "$1: output differs from the plain comparison"
        diff "$2" "$3" | head -8 | sed 's/^/    /'
        return 1
    fi
    return 0
}

# expect_no_output WHAT FILE: neither FILE nor a temporary file beside it.
expect_no_output() {
    checks=$((checks + 1))
    if [ -e "$2" ] || ls "$2".tmp.* >/dev/null 2>&1; then
        fail "$1: an output file was left: $(ls "$2"* 2>/dev/null | tr '\n' ' ')"
    fi
}

