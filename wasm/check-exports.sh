#!/bin/sh
# Checks that wasm/exports.txt lists exactly the PSI_API functions of the
# public headers, so the wasm module exports the whole API
# and nothing the headers do not declare.
#   check-exports.sh REPO_ROOT
set -eu
root=${1:-$(dirname "$0")/..}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# Declarations may span lines: join each header into one line first.
cat "$root/psi/include/psi.h" "$root/shard/include/psi_shard.h" | tr '\n' ' ' |
    grep -oE 'PSI_API [^;(]*[^a-z0-9_]psi_[a-z0-9_]+\(' |
    grep -oE 'psi_[a-z0-9_]+\($' | tr -d '(' | LC_ALL=C sort -u >"$tmp/headers"
LC_ALL=C sort -u "$root/wasm/exports.txt" >"$tmp/exports"
[ -s "$tmp/headers" ] || { echo "check-exports: no PSI_API function found" >&2; exit 1; }
if ! cmp -s "$tmp/headers" "$tmp/exports"; then
    echo "check-exports: wasm/exports.txt differs from the PSI_API declarations:" >&2
    diff "$tmp/headers" "$tmp/exports" | sed -n 's/^</  missing from exports.txt:/p; s/^>/  not in the headers:/p' >&2
    exit 1
fi
echo "check-exports: $(wc -l <"$tmp/exports") functions, ok"
