#!/usr/bin/env bash
# The whole test suite: sets up (scripts/setup.sh), runs every meson test in
# the normal build, then again under AddressSanitizer + UndefinedBehavior-
# Sanitizer, then the sharding layer's tests under ThreadSanitizer, then
# every suite but the command line's on the portable P-256 arithmetic of
# the wasm build, and
# then the WebAssembly package: its Node tests (wasm/test/run.sh, which builds
# the wasm32 dependencies once into a cache outside the clone, then the
# module), its browser test in headless Chromium
# (wasm/test/browser/run-browser.mjs) and the packed npm package installed
# into fresh projects, in Node and in a Vite build in Chromium
# (wasm/test/package/run.sh), and ends with one line
# "N passed, M failed" over all suites.
# The normal build's run is followed by shardpsi-mpi on a million values
# (TEST_MPI_PARTS=b, tests/mpi/test_mpi.sh), which plain `meson test` skips.
# Between the native suites and the JavaScript package it also runs every
# suite once more under valgrind memcheck (`meson test --setup valgrind`,
# tests/meson.build), installs the library into a fresh prefix and builds
# and runs the examples against it (examples/run.sh), and runs each
# libFuzzer harness for a short budget (scripts/fuzz.sh; PSI_FUZZ_SECONDS,
# default 30 here: from the seeded corpora each harness reached within 1%
# of the coverage of a 60 s run in it, measured 2026-12-04, and the run
# must fit CI's hour; scripts/fuzz.sh alone takes 60).
# Exit status 0 only if every test passed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

if [[ ! -f build-sanitize/build.ninja ]]; then
    meson setup build-sanitize --buildtype=debug -Db_sanitize=address,undefined \
        -Db_lundef=false -Dbench=false -Dc_args=-fno-sanitize-recover=all >/dev/null ||
        { echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C build-sanitize >/dev/null || { echo "0 passed, 1 failed"; exit 1; }

# ThreadSanitizer over the sharding layer's own tests: the pool, the
# sharded calls on several threads and their failure paths.
tsan_tests=(pool shard shard_steps shard_fault)
if [[ ! -f build-tsan/build.ninja ]]; then
    meson setup build-tsan --buildtype=debugoptimized -Db_sanitize=thread \
        -Db_lundef=false -Dbench=false >/dev/null ||
        { echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C build-tsan tests/shard/test_pool tests/shard/test_shard tests/shard/test_shard_steps \
    tests/shard/test_shard_fault >/dev/null || { echo "0 passed, 1 failed"; exit 1; }

# The portable P-256 arithmetic the wasm build uses (psi/p256.c,
# -Dp256=portable), natively: every suite again on that engine but the
# command line's (cli: its engine calls are the library's, which the unit,
# kat and shard suites check on this engine, and its own code ran in the
# normal build; its network and spill tests took 3.5 minutes here),
# compiled as emcc compiles it (clang, -O3), so that the constant-time test
# under valgrind (ct_p256) sees the code clang makes of it.
if [[ ! -f build-portable/build.ninja ]]; then
    CC=clang-14 meson setup build-portable --buildtype=release -Dp256=portable -Dbench=false >/dev/null ||
        { echo "0 passed, 1 failed"; exit 1; }
fi
ninja -C build-portable >/dev/null || { echo "0 passed, 1 failed"; exit 1; }

# Node and psi.js first: the native suites' bench_psijs test (psi bench's
# psi.js column) needs them, and skips without.
js_setup=0
bash scripts/setup-js.sh || js_setup=1

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export TSAN_OPTIONS=halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
# Each stage's start, in seconds since this script began, to keep the whole
# run within CI's time (README: under an hour on 2 cores).
stage() { echo "== test.sh: $* (+${SECONDS}s)"; }
stage "normal build"
meson test -C build --print-errorlogs --num-processes 2 || status=1
# shardpsi-mpi on the million-value set (part b of tests/mpi/test_mpi.sh), which
# `meson test` leaves out for time: ~4 minutes of both cores.
logs=(build/meson-logs/testlog.json)
if meson test -C build --list 2>/dev/null | grep -qx 'shardpsi:mpi / mpi'; then
    stage "normal build: shardpsi-mpi on a million values"
    TEST_MPI_PARTS=b meson test -C build --no-rebuild --print-errorlogs \
        --logbase testlog-mpi-big mpi || status=1
    logs+=(build/meson-logs/testlog-mpi-big.json)
fi
stage "AddressSanitizer + UndefinedBehaviorSanitizer"
meson test -C build-sanitize --print-errorlogs --num-processes 2 --timeout-multiplier 4 || status=1
stage "ThreadSanitizer"
meson test -C build-tsan --no-rebuild --print-errorlogs --num-processes 2 \
    --timeout-multiplier 4 "${tsan_tests[@]}" || status=1
stage "portable P-256"
meson test -C build-portable --print-errorlogs --num-processes 2 --timeout-multiplier 2 \
    --no-suite mpi --no-suite cli || status=1
# valgrind memcheck over the normal build: every suite but those that run
# valgrind themselves (ctime), replace malloc themselves (malloc_hooks: the
# key hygiene test, run above unwrapped), only repeat others at more shard
# counts and sizes (shard_matrix: the vector files at every shard count,
# which `vectors` runs once; demo), or check the headers and the export
# list (headers: a sh script, whose dash leaks by valgrind's measure), or
# start mpirun (mpi: Open MPI's own blocks would drown the report; the
# portable build skips it too, its engine being covered by the others), or
# exist for the AVX-512 IFMA lanes (lanes: valgrind runs no AVX-512, so they
# would only repeat, slowly, the plain-C form that ct_p256_x8 checks here).
stage "valgrind"
meson test -C build --setup valgrind --no-rebuild --print-errorlogs --num-processes 2 \
    --no-suite ctime --no-suite malloc_hooks --no-suite shard_matrix --no-suite demo \
    --no-suite headers --no-suite mpi --no-suite lanes || status=1

# The fuzz harnesses and the JavaScript package.  Each runner ends with "N
# passed, M failed"; a runner that never gets that far counts as one failure.
js_counts=()
run_js() {   # NAME COMMAND...
    local name=$1 log last
    shift
    stage "$name"
    log=$(mktemp) || return 1
    # the runner's own summary line is shown under its name, so that the
    # last line of this script stays the only bare one
    "$@" 2>&1 | tee "$log" | sed -E "s/^([0-9]+ passed, [0-9]+ failed)\$/$name: \\1/"
    local rc=${PIPESTATUS[0]}
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    rm -f "$log"
    if [[ -z $last ]]; then
        echo "failed: $name (no summary line)"
        js_counts+=("0 1")
        status=1
        return
    fi
    set -- $last
    [[ $rc -eq 0 && $3 -eq 0 ]] || status=1
    [[ $rc -ne 0 && $3 -eq 0 ]] && { echo "failed: $name (exit status $rc)"; js_counts+=("$1 1"); return; }
    js_counts+=("$1 $3")
}
# The library as a user installs it: a fresh prefix, the C and CLI examples
# built and run against it with pkg-config and no LD_LIBRARY_PATH.
run_js "examples" bash examples/run.sh
# The Python package as a user installs it (python/install.sh into a fresh
# virtual environment), and its pytest suite.
run_js "python package" bash python/test.sh
run_js "fuzz" bash scripts/fuzz.sh --seconds "${PSI_FUZZ_SECONDS:-30}"
if [[ $js_setup -eq 0 ]]; then
    run_js "suite vectors" bash vectors/check-suites.sh
    run_js "wasm Node tests" bash wasm/test/run.sh build-wasm
    run_js "wasm browser test" node wasm/test/browser/run-browser.mjs
    run_js "npm package" bash wasm/test/package/run.sh
else
    echo "failed: scripts/setup-js.sh"
    js_counts+=("0 1")
    status=1
fi

stage "done"
# Count results from the meson runs' logs (meson writes one JSON object a
# line) and add the JavaScript runners' counts.
python3 - "${logs[@]}" build/meson-logs/testlog-valgrind.json \
    build-sanitize/meson-logs/testlog.json \
    build-tsan/meson-logs/testlog.json build-portable/meson-logs/testlog.json \
    "${js_counts[@]}" <<'PY'
import json, sys
passed = failed = 0
for arg in sys.argv[1:]:
    if not arg.endswith(".json"):
        p, f = arg.split()
        passed += int(p)
        failed += int(f)
        continue
    path = arg
    try:
        lines = open(path).read().splitlines()
    except OSError:
        failed += 1
        continue
    for line in lines:
        r = json.loads(line)
        if r.get("result") in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r.get("result") != "SKIP":
            failed += 1
            print("failed: %s (%s)" % (r.get("name"), path.split("/")[0]))
print("%d passed, %d failed" % (passed, failed))
PY
[[ $? -eq 0 ]] || status=1
exit $status
