#!/usr/bin/env bash
# The whole test suite: sets up (scripts/setup.sh), runs every meson test in
# the normal build, then again under AddressSanitizer + UndefinedBehavior-
# Sanitizer, then the sharding layer's tests under ThreadSanitizer, and
# ends with one line "N passed, M failed" over all suites.
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
ninja -C build-tsan tests/test_pool tests/test_shard tests/test_shard_steps \
    tests/test_shard_fault >/dev/null || { echo "0 passed, 1 failed"; exit 1; }

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export TSAN_OPTIONS=halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
meson test -C build --print-errorlogs --num-processes 2 || status=1
meson test -C build-sanitize --print-errorlogs --num-processes 2 --timeout-multiplier 4 || status=1
meson test -C build-tsan --no-rebuild --print-errorlogs --num-processes 2 \
    --timeout-multiplier 4 "${tsan_tests[@]}" || status=1

# Count results from both runs' logs (meson writes one JSON object a line).
python3 - build/meson-logs/testlog.json build-sanitize/meson-logs/testlog.json \
    build-tsan/meson-logs/testlog.json <<'PY'
import json, sys
passed = failed = 0
for path in sys.argv[1:]:
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
