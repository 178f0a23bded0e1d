#!/bin/sh
# The two-terminal session of README.md ("Two machines"), run in one script:
# each side makes a TLS key once and gives the other its fingerprint; the
# server answers one client on 127.0.0.1:7700 with customers.txt over
# mutually authenticated TLS 1.3, the client matches leads.csv on its
# "email" column and writes matched.csv, which must equal expected.csv (the
# header and the two shared rows).
#
#   cd examples/cli && sh two-terminals.sh    # with shardpsi on PATH
#
# On two machines the server listens on 0.0.0.0:7700 and the client connects
# to server-host:7700.  Exits 0 only if the round gave the expected rows.
set -eu
cd "$(dirname "$0")"
command -v shardpsi >/dev/null || { echo "two-terminals: shardpsi is not on PATH" >&2; exit 2; }
tmp=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
cp customers.txt leads.csv expected.csv "$tmp/"
cd "$tmp"    # the round's files, matched.csv among them, stay out of this directory

keys() {
# README:begin
# once, on each side: a key and certificate; each prints its fingerprint
shardpsi tls-keygen --cert server.pem --key server.key > server.fp   # the server's
shardpsi tls-keygen --cert client.pem --key client.key > client.fp   # the client's
# ... then each sends the other its .fp file (it is not secret)
# README:end
}
terminal1() {
# README:begin
# terminal 1, the server (its file: one value per line)
shardpsi server --listen 127.0.0.1:7700 --input customers.txt --reveal \
    --tls-cert server.pem --tls-key server.key --tls-peer-key "$(cat client.fp)"
# README:end
}
terminal2() {
# README:begin
# terminal 2, the client (a CSV file, matching on its "email" column)
shardpsi client --connect 127.0.0.1:7700 --input leads.csv --column email --output matched.csv \
    --tls-cert client.pem --tls-key client.key --tls-peer-key "$(cat server.fp)"
# README:end
}

keys 2>"$tmp/keys.log"

terminal1 2>"$tmp/server.log" &
server=$!
i=0
until grep -q "listening on" "$tmp/server.log"; do
    i=$((i + 1))
    kill -0 "$server" 2>/dev/null && [ $i -lt 100 ] ||
        { cat "$tmp/server.log" >&2; echo "two-terminals: the server did not start" >&2; exit 1; }
    sleep 0.1
done
terminal2
wait "$server"
server=
cmp matched.csv expected.csv || { echo "two-terminals: matched.csv differs from expected.csv" >&2; exit 1; }
echo "two-terminals: 2 of 4 leads matched, as expected"
