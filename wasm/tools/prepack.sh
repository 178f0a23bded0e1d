#!/usr/bin/env bash
# npm's prepack (`npm pack`, `npm publish`) in wasm/: refuses to pack a
# package without its module.  dist/shardpsi.{mjs,wasm} must exist, the glue
# must be the ES module build, and neither may be older than a differing
# build output (the build directory of `npm run build`: build-wasm/ of the
# clone, or SHARDPSI_BUILD_DIR).  Copies the repository's LICENSE into wasm/
# (ignored by git) and refuses without it.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "shardpsi prepack: $*" >&2; exit 1; }
build=${SHARDPSI_BUILD_DIR:-../build-wasm}/wasm
for f in shardpsi.mjs shardpsi.wasm; do
    [[ -s dist/$f ]] ||
        die "dist/$f is missing: run \`npm run build\` in wasm/ first (it builds the module into dist/)"
    if [[ -f $build/$f && $build/$f -nt dist/$f ]] && ! cmp -s "$build/$f" "dist/$f"; then
        die "dist/$f is older than the build ($build/$f): run \`npm run build\` in wasm/ again"
    fi
done
grep -q 'export default createShardPsi' dist/shardpsi.mjs ||
    die "dist/shardpsi.mjs is not the ES module glue: run \`npm run build\` in wasm/ again"
[[ -f ../LICENSE ]] || die "../LICENSE is missing: the package must ship the repository's licence"
cp ../LICENSE LICENSE
