#!/usr/bin/env bash
# Installs what shardpsi needs on a fresh Debian machine (as root, or with
# sudo) and builds it into ./build.  Safe to run again: installed packages
# and an existing build are reused.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(meson ninja-build pkg-config gcc libc6-dev python3 libssl-dev libsodium-dev
          libcmocka-dev libcjson-dev valgrind clang-14)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo=sudo
    echo "setup: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

[[ -f build/build.ninja ]] || meson setup build --buildtype=debugoptimized >/dev/null
ninja -C build >/dev/null
echo "setup: built ./build (psi command: build/cli/psi)" >&2
