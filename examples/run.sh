#!/usr/bin/env bash
# Builds and runs the native examples against the library as a user installs
# it: configures a release build (build-install/) with its prefix in a fresh
# directory outside the repository, runs `meson install`, then
#   - compiles examples/c/round.c with nothing but pkg-config's flags and
#     runs it with no LD_LIBRARY_PATH (the -Wl,-rpath that examples/c says to
#     add), checking that it loads libshardpsi from the prefix;
#   - runs the installed `shardpsi --version` and the two-terminal session
#     of examples/cli with the prefix's bin/ on PATH.
# Ends with "N passed, M failed"; exit status 0 only if all passed.
#   bash examples/run.sh
# The Node and browser examples run from the packed npm tarball in
# wasm/test/package/run.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
passed=0 failed=0
pass() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "failed: $*"; failed=$((failed + 1)); }
finish() { echo "$passed passed, $failed failed"; [[ $failed -eq 0 ]]; exit; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardpsi-examples.XXXXXX") || { fail "mktemp"; finish; }
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
build=build-install
log=$tmp/build.log
if [[ -f $build/build.ninja ]]; then
    meson configure "$build" -Dprefix="$prefix" >"$log" 2>&1
else
    meson setup "$build" --buildtype=release --prefix="$prefix" -Dtests=false -Dbench=false \
        >"$log" 2>&1
fi || { cat "$log"; fail "meson setup of $build"; finish; }
if meson install -C "$build" >>"$log" 2>&1; then
    pass "meson install into a fresh prefix"
else
    tail -n 30 "$log"; fail "meson install"; finish
fi

# Nothing but what a user has: the prefix's pkg-config files, no build tree.
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name shardpsi.pc | head -n 1)")
for h in psi.h psi_shard.h; do
    [[ -f $(pkg-config --variable=includedir shardpsi)/$h ]] || fail "$h not installed"
done
libdir=$(pkg-config --variable=libdir shardpsi)
for so in libshardpsi.so.0 libshardpsi_shard.so.0; do
    [[ -e $libdir/$so ]] && pass "$so installed in the prefix" || fail "$so not in $libdir"
done

[[ -f $prefix/share/doc/shardpsi/LICENSE ]] && pass "LICENSE installed with the library" ||
    fail "no LICENSE under $prefix/share/doc/shardpsi"

# examples/c/*.c, compiled as their header comments say, run with no
# LD_LIBRARY_PATH: each must load libshardpsi from the prefix and print
# its expected line.
example() {   # NAME PKG EXPECTED_OUTPUT_PREFIX
    local exe=$tmp/$1 out rc loaded
    if cc -std=c11 -Wall -Wextra -Werror -pedantic "$root/examples/c/$1.c" -o "$exe" \
            $(pkg-config --cflags --libs "$2") -Wl,-rpath,"$libdir" 2>"$tmp/cc.log"; then
        pass "examples/c/$1.c compiles against the installed library"
    else
        cat "$tmp/cc.log"; fail "examples/c/$1.c does not compile"; return
    fi
    loaded=$(env -u LD_LIBRARY_PATH ldd "$exe" | awk '/libshardpsi\.so/ { print $3 }')
    [[ $loaded == "$libdir"/* ]] && pass "$1 loads libshardpsi from the prefix" ||
        fail "$1 loads libshardpsi from '$loaded', not $libdir"
    out=$(env -u LD_LIBRARY_PATH "$exe" 2>&1)
    rc=$?
    [[ $rc -eq 0 && $out == "$3"* ]] && pass "$1: $out" || fail "$1: exit $rc, printed: $out"
}
example round shardpsi "2 of 3 client values are in the server's set:"
example sharded shardpsi-shard "10000 values: the sharded setup (350004 bytes) equals the single engine's"

# The installed command: found through its RUNPATH, from any directory.
bin=$prefix/bin
# Two lines: the version, then the arithmetic this CPU runs (PROTOCOL.md §21).
ver=$(cd "$tmp" && env -u LD_LIBRARY_PATH "$bin/shardpsi" --version 2>&1)
[[ ${ver%%$'\n'*} == "shardpsi $(pkg-config --modversion shardpsi)" &&
   ${ver#*$'\n'} == "arithmetic: "* ]] &&
    pass "installed shardpsi --version: ${ver//$'\n'/; }" ||
    fail "installed shardpsi --version: ${ver//$'\n'/; }"
if [[ -x $bin/shardpsi-mpi ]]; then    # built where meson found Open MPI
    rp=$(readelf -d "$bin/shardpsi-mpi" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    [[ $rp == '$ORIGIN/../'* ]] && pass "installed shardpsi-mpi has RUNPATH $rp" ||
        fail "installed shardpsi-mpi has RUNPATH '$rp', not \$ORIGIN/../LIBDIR"
fi
if out=$(env -u LD_LIBRARY_PATH PATH="$bin:$PATH" sh "$root/examples/cli/two-terminals.sh" 2>&1); then
    pass "examples/cli/two-terminals.sh with the installed shardpsi"
else
    echo "$out"; fail "examples/cli/two-terminals.sh"
fi
finish
