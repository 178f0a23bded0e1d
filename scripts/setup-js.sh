#!/usr/bin/env bash
# Installs what the WebAssembly package's tests need on a fresh Debian machine
# (as root, or with sudo): Node.js and npm when missing (Debian's), Debian's
# Chromium for the browser test, and the npm devDependencies of wasm/
# (playwright-core, which drives /usr/bin/chromium, no browser downloaded;
# typescript, which checks the declarations)
# and vectors/ (@openmined/psi.js 2.0.6, for the interoperability tests and
# fresh random vectors).  Both directories' .npmrc forbid install scripts and
# lock files.  The wasm32 OpenSSL/libsodium and the module itself are built by
# wasm/build.sh (wasm/deps.sh caches the libraries outside the clone).
# Safe to run again: what is installed is reused.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(chromium)
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
bash scripts/apt-install.sh "${packages[@]}"

# npm install only when a pinned package is absent; --ignore-scripts is also in
# each .npmrc, repeated here because psi.js's dependency would download a binary.
npm_install() {   # DIR PACKAGE_JSON_OF_A_DEPENDENCY
    [[ -f $1/node_modules/$2 ]] && return 0
    echo "setup-js: npm install in $1" >&2
    (cd "$1" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
}
npm_install wasm playwright-core/package.json
npm_install wasm typescript/package.json
npm_install vectors @openmined/psi.js/package.json
echo "setup-js: node $(node --version), $(/usr/bin/chromium --version 2>/dev/null || echo 'no chromium')" >&2
