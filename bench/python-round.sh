#!/usr/bin/env bash
# A round of N values through the Python package against the C command, in
# one run: `shardpsi demo` (one process, both parties on T threads and S
# shards) and the same four steps through shardpsi.Server/Client with the
# same threads and shards, on sets of the same shape (N server and N client
# values "user-<16 hex digits>@example.org", half shared, GCS, fpr 1e-6),
# alternated R times; prints each side's median step times, values per
# second of the whole round and the package's ratio to the command.
#   bench/python-round.sh [--build DIR] [--venv VENV] [--n N] [--runs R]
# The package is installed by python/install.sh (default venv:
# build-python/venv, as python/test.sh leaves it).
set -euo pipefail
build=build-release venv=build-python/venv n=100000 runs=5 threads=2 shards=8
while [[ $# -gt 0 ]]; do
    case $1 in
        --build) build=$2; shift 2 ;;
        --venv) venv=$2; shift 2 ;;
        --n) n=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        *) echo "usage: $0 [--build DIR] [--venv VENV] [--n N] [--runs R]" >&2; exit 2 ;;
    esac
done
psi=$build/cli/shardpsi
[[ -x $psi ]] || { echo "$0: build $build first (no $psi)" >&2; exit 2; }
[[ -x $venv/bin/python ]] || { echo "$0: install the package first (bash python/install.sh $venv)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/round.py" <<'PY'
import os, sys, time
import shardpsi
n, threads, shards = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rnd = os.urandom
server_vals = ["user-%s@example.org" % rnd(8).hex() for _ in range(n)]
client_vals = server_vals[: n // 2] + ["user-%s@example.org" % rnd(8).hex() for _ in range(n - n // 2)]
s = shardpsi.Server(threads=threads, shards=shards)
c = shardpsi.Client(threads=threads, shards=shards)
t = [time.perf_counter()]
setup = s.setup(server_vals, structure="gcs", fpr=1e-6, num_client_inputs=n); t.append(time.perf_counter())
req = c.request(client_vals); t.append(time.perf_counter())
resp = s.process_request(req); t.append(time.perf_counter())
got = c.intersection(setup, resp); t.append(time.perf_counter())
assert len(got) >= n // 2
print(" ".join("%.1f" % ((b - a) * 1000) for a, b in zip(t, t[1:])))
PY
c_times=() p_times=()
for r in $(seq 1 "$runs"); do
    "$psi" demo --seed "$r" --server-size "$n" --client-size "$n" --structure gcs \
        --threads "$threads" --shards "$shards" >"$dir/demo" 2>&1
    c_times+=("$(awk '/^(server setup|client request|server response|client intersection) / {
        for (i = 1; i <= NF; i++) if ($(i + 1) == "ms") printf "%s ", $i } END { print "" }' "$dir/demo")")
    p_times+=("$("$venv/bin/python" "$dir/round.py" "$n" "$threads" "$shards")")
done
printf '%s\n' "${c_times[@]}" >"$dir/c"
printf '%s\n' "${p_times[@]}" >"$dir/p"
python3 - "$dir/c" "$dir/p" "$n" "$runs" "$threads" "$shards" <<'PY'
import statistics, sys
def load(p):
    return [[float(x) for x in line.split()] for line in open(p) if line.strip()]
c, p = load(sys.argv[1]), load(sys.argv[2])
n, runs = int(sys.argv[3]), sys.argv[4]
steps = ["server setup", "client request", "server response", "client intersection"]
print(f"a round of {n} values a side, GCS, {sys.argv[5]} threads and {sys.argv[6]} shards a party, median of {runs} alternated runs")
print("| step | C command ms | Python package ms | ratio |\n| --- | --- | --- | --- |")
for i, name in enumerate(steps):
    a = statistics.median(r[i] for r in c); b = statistics.median(r[i] for r in p)
    print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.3f} |")
a = statistics.median(sum(r) for r in c); b = statistics.median(sum(r) for r in p)
print(f"| round | {a:.1f} | {b:.1f} | {b / a:.3f} |")
print(f"values per second of the round (4 steps, {n} values each): C {4 * n / a * 1000:.0f}, Python {4 * n / b * 1000:.0f}")
PY
