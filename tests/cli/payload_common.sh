# The inputs and the plain join of the private-join tests (test_payloads.sh,
# test_payloads_net.sh), sourced after $d (a scratch directory) is set and
# fail() and $checks exist.
# shellcheck shell=bash

# payload_inputs N_SERVER N_CLIENT_RANGE: writes $d/server.csv (id, the email
# join key, a region with commas, quotes and non-ASCII in some fields, a
# segment), $d/client.csv (a name and the email, every third of
# 0..N_CLIENT_RANGE, so about a third of them a server's, in another order,
# and one row whose email differs from a server's only in case) and
# $d/client.txt (its emails, one a line).  No value twice: a raw setup pairs
# copies one to one (PROTOCOL.md §9.5), where a join repeats them.
payload_inputs() {
    python3 - "$d" "$1" "$2" <<'PY'
import csv, random, sys
d, n, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(20261205)
regions = ['north', 'south', 'east, west', '"quoted"', 'caf\u00e9', '']
with open(d + '/server.csv', 'w', newline='', encoding='utf-8') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['id', 'email', 'region', 'segment'])
    for i in range(n):
        w.writerow([i, 'user%d@example.org' % i, rng.choice(regions), 'seg%d' % (i % 7)])
rows = [['n%d' % i, 'user%d@example.org' % i] for i in range(0, m, 3)] + [['upper', 'USER1@example.org']]
rng.shuffle(rows)
with open(d + '/client.csv', 'w', newline='', encoding='utf-8') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['name', 'email'])
    w.writerows(rows)
with open(d + '/client.txt', 'w', encoding='utf-8') as f:
    f.writelines(r[1] + '\n' for r in rows)
PY
}

# payload_join CLIENT SERVER KEY COLS OUT [lines|server]: the plain inner join,
# as the client writes it (its rows in input order, the server's columns
# COLS appended; lines: the value and the columns, tab-separated, quoted as
# RFC 4180 asks with the tab for the comma; COLS ''
# gives the rows alone), or (server) the server's rows whose value the
# client holds, in the server's order, with its header.
payload_join() {
    python3 - "$@" <<'PY'
import csv, sys
client, server, key, cols, out = sys.argv[1:6]
mode = sys.argv[6] if len(sys.argv) > 6 else 'csv'
cols = cols.split(',') if cols else []
with open(server, newline='', encoding='utf-8') as f:
    r = csv.reader(f)
    sh = next(r)
    srows = list(r)
srv = {row[sh.index(key)]: [row[sh.index(c)] for c in cols] for row in srows}
with open(out, 'w', newline='', encoding='utf-8') as f:
    w = csv.writer(f, lineterminator='\n')
    if mode == 'lines':
        # Tab-separated, a cell quoted when it holds a tab, a quote or a
        # line break (RFC 4180's rule with the tab as the separator).
        t = csv.writer(f, delimiter='\t', lineterminator='\n')
        for v in open(client, encoding='utf-8').read().splitlines():
            if v in srv:
                t.writerow([v] + srv[v])
        sys.exit(0)
    with open(client, newline='', encoding='utf-8') as g:
        r = csv.reader(g)
        ch = next(r)
        crows = list(r)
    if mode == 'server':
        held = {row[ch.index(key)] for row in crows}
        w.writerow(sh)
        w.writerows(row for row in srows if row[sh.index(key)] in held)
    else:
        w.writerow(ch + cols)
        w.writerows(row + srv[row[ch.index(key)]] for row in crows if row[ch.index(key)] in srv)
PY
}

# same_csv WHAT A B: the two CSV files hold the same records (quoting aside).
same_csv() {
    checks=$((checks + 1))
    python3 -c '
import csv, sys
a, b = (list(csv.reader(open(p, newline="", encoding="utf-8"))) for p in sys.argv[1:3])
sys.exit(0 if a == b else 1)' "$2" "$3" || { fail "$1: $2 and $3 differ"; diff "$2" "$3" | head -5; }
}
