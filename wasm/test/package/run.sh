#!/usr/bin/env bash
# The npm package's artifact test (run.mjs beside this file): build, npm pack,
# install the tarball into fresh projects under /tmp and run the examples there
# in Node and, built by Vite, in headless Chromium.  Ends with one line
# "N passed, M failed"; exit status 0 only if all passed.
#   bash wasm/test/package/run.sh
set -uo pipefail
cd "$(dirname "$0")"
exec node run.mjs "$@"
