#!/usr/bin/env bash
# The suite vector files (PROTOCOL.md §16.5) against their independent
# generator and against psi.js: vectors/suite-ref.py checks itself against
# the RFC 9380 / RFC 9496 / RFC 9497 vectors and sample-vectors.json, then
# recomputes every byte of both files; psi.js must refuse every message of
# them (§16.1).  The library itself checks the files in the meson suites
# (psi vectors check).  Ends with "N passed, M failed".
#   vectors/check-suites.sh [--testdata DIR]
set -uo pipefail
cd "$(dirname "$0")"
passed=0 failed=0
step() {   # NAME COMMAND...
    local name=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
    else
        echo "FAIL: $name"
        failed=$((failed + 1))
    fi
}
step "suite-ref.py --selftest" python3 suite-ref.py --selftest "$@"
for f in shardpsi-p256-sswu.json shardpsi-ristretto255.json; do
    step "suite-ref.py --check $f" python3 suite-ref.py --check "$f"
done
# The payload tables' vectors (§22): the AEAD against RFC 8439 and the
# XChaCha draft, then every table, opened payload and refusal recomputed.
step "payload-ref.py --selftest" python3 payload-ref.py --selftest
step "payload-ref.py --check shardpsi-payloads.json" python3 payload-ref.py --check shardpsi-payloads.json
step "psi.js refuses every suite message" node psijs-refuses-suites.mjs
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
