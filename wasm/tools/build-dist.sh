#!/usr/bin/env bash
# `npm run build` in wasm/: builds the module (wasm/build.sh, default
# build-wasm/ of the clone) and copies its two files into dist/, the files
# the package ships.  Arguments go to build.sh (a BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(bash build.sh "$@" | tail -n 1)
mkdir -p dist
cp "$dir/shardpsi.mjs" "$dir/shardpsi.wasm" dist/
echo "dist/: shardpsi.mjs and shardpsi.wasm from $dir" >&2
