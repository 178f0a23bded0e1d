#!/usr/bin/env bash
# Installs the Debian packages named on the command line that are not
# installed yet (as root, or with sudo); does nothing when all are there.
#   bash scripts/apt-install.sh PACKAGE...
set -euo pipefail
missing=()
for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
sudo=""
[[ $(id -u) -eq 0 ]] || sudo=sudo
echo "apt-install: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null
