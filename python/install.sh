#!/usr/bin/env bash
# Installs the Python package `shardpsi` on a fresh Debian machine, from
# Debian's packages and this tree alone (no package index is asked):
# Debian's python3 with cffi, pytest, venv, setuptools and wheel; the C
# library built in release mode (build-python/) and bundled into the
# package; the package installed with pip, no index, no build isolation,
# into a virtual environment that sees Debian's packages.
#   bash python/install.sh [VENV]      (default: python/.venv)
# Then: VENV/bin/python -c 'import shardpsi' (or activate VENV).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/python/.venv}
cd "$root"
bash scripts/apt-install.sh meson ninja-build pkg-config gcc libc6-dev libssl-dev \
    libsodium-dev python3 python3-cffi python3-pytest python3-venv python3-setuptools \
    python3-wheel python3-pip
if [[ ! -f build-python/build.ninja ]]; then
    meson setup build-python --buildtype=release -Dtests=false -Dbench=false -Dmpi=disabled \
        >/dev/null
fi
ninja -C build-python >/dev/null
mkdir -p python/shardpsi/_lib
cp -L build-python/psi/libshardpsi.so.0 build-python/shard/libshardpsi_shard.so.0 \
    python/shardpsi/_lib/
[[ -x $venv/bin/python ]] || /usr/bin/python3 -m venv --system-site-packages "$venv"
# A copy of the package's tree, so that pip's build leaves nothing in this one.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -r python/pyproject.toml python/setup.py python/README.md python/shardpsi "$stage/"
"$venv/bin/python" -m pip install --quiet --no-index --no-build-isolation --force-reinstall \
    --no-deps "$stage"
"$venv/bin/python" -c 'import shardpsi; print("shardpsi", shardpsi.__version__, "library",
    shardpsi.version(), "installed in '"$venv"'")'
