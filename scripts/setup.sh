#!/usr/bin/env bash
# Installs what shardpsi needs on a fresh Debian machine (as root, or with
# sudo) and builds it into ./build.  Safe to run again: installed packages
# and an existing build are reused.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(meson ninja-build pkg-config gcc libc6-dev python3 libssl-dev libsodium-dev
          libcmocka-dev libcjson-dev valgrind clang-14 libclang-rt-14-dev
          openmpi-bin libopenmpi-dev)
bash scripts/apt-install.sh "${packages[@]}"

[[ -f build/build.ninja ]] || meson setup build --buildtype=debugoptimized >/dev/null
ninja -C build >/dev/null
echo "setup: built ./build (command: build/cli/shardpsi; MPI runner: build/mpi/shardpsi-mpi)" >&2
