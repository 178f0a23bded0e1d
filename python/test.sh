#!/usr/bin/env bash
# The Python package's tests on the package as a user gets it: installed
# by python/install.sh into a fresh virtual environment (default
# build-python/venv), then pytest run from an empty directory, so that
# `import shardpsi` is the installed package and not this tree.  Ends with
# one line "N passed, M failed".
#   bash python/test.sh [VENV]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/build-python/venv}
rm -rf "$venv"
bash "$root/python/install.sh" "$venv" || { echo "0 passed, 1 failed"; exit 1; }
# The network tests run rounds with the C command install.sh built, and make
# a CA with the openssl command; the value tests take pandas and numpy
# inputs.
bash "$root/scripts/apt-install.sh" openssl python3-pandas || { echo "0 passed, 1 failed"; exit 1; }
export SHARDPSI_CLI=$root/build-python/cli/shardpsi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$venv/bin/python" -m pytest -q -p no:cacheprovider --junitxml="$work/report.xml" \
    "$root/python/tests"
rc=$?
/usr/bin/python3 - "$work/report.xml" "$rc" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    total = sum(int(s.get("tests", 0)) for s in suites)
    bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
except Exception as e:  # no report: pytest did not run
    print(f"python/test.sh: no pytest report ({e})")
    total, bad, skipped = 0, 1, 0
if sys.argv[2] != "0" and bad == 0:
    bad = 1
print(f"{total - bad - skipped} passed, {bad} failed")
sys.exit(1 if bad else 0)
PY
