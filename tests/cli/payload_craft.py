#!/usr/bin/env python3
"""Payload files with chosen payload bytes, for the tests of the client's
cells (PROTOCOL.md §22.1: a payload is data, never structure).

    payload_craft.py OUT_DIR

A hostile server can send any bytes as a payload, and `shardpsi server
--setup SETUP --payloads FILE` sends a file's table as it is; this writes
such tables with vectors/payload-ref.py (the independent Python
implementation of the table) and the server key OUT_DIR/sk (ristretto255),
for the server values of OUT_DIR/server.txt.  It writes:

  sk, ck          the server's and the client's key files
  server.txt      the server's values, one a line
  client.csv      name,email: every server value and others, shuffled
  client.txt      its emails, one a line (the same order)
  honest.pay      a payload file of honest payloads: fields with commas,
                  quotes, line breaks, non-ASCII, and formula-like cells
  honest.json     {"head": [names], "rows": {email: [field values]}}
  cNN.pay         a crafted table: one payload (or the head) is not data
  crafted         a line "cNN <TAB> ROW <TAB> what" each (ROW: the client
                  row, 1-based, whose payload is crafted; 0: the head)
  rNN.pay         tables of random payloads from bytes that make structure
  random          a line "rNN <TAB> ROW <TAB> HEX" each: the row of the
                  random payload and its bytes in hex
"""
import hashlib
import importlib.util
import json
import os
import random
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "payload_ref", os.path.join(here, "..", "..", "vectors", "payload-ref.py"))
pref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pref)
SUITE = pref.ref.SUITES["ristretto255"]


def cell(v):
    """v (bytes) as one CSV field, quoted when RFC 4180 asks."""
    if any(c in v for c in b',"\r\n'):
        return b'"' + v.replace(b'"', b'""') + b'"'
    return v


def fragment(fields):
    return b",".join(cell(f) for f in fields)


def table(elements, payloads, salt):
    """The table of §22 with the given payload bytes (any bytes)."""
    L = max((len(p) for p in payloads), default=0)
    head = pref.header(SUITE, L, len(elements), salt)
    recs = sorted(pref.record(SUITE, head, salt, e, p, L) for e, p in zip(elements, payloads))
    return head + b"".join(r for _, r in recs)


def write(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def main():
    out = sys.argv[1]
    rng = random.Random(54)
    skey = pref.ref.derive_key(SUITE, "payload-cells/server")
    ckey = pref.ref.derive_key(SUITE, "payload-cells/client")
    write(os.path.join(out, "sk"), (skey.hex() + " ristretto255\n").encode(), 0o600)
    write(os.path.join(out, "ck"), (ckey.hex() + " ristretto255\n").encode(), 0o600)
    values = [b"u%d@example.org" % i for i in range(40)]
    write(os.path.join(out, "server.txt"), b"".join(v + b"\n" for v in values))
    k = SUITE.parse_key(skey)
    elements = [SUITE.encrypt(k, v) for v in values]
    rows = [[b"n%d" % i, v] for i, v in enumerate(values)]
    rows += [[b"other%d" % i, b"x%d@example.org" % i] for i in range(10)]
    rng.shuffle(rows)
    write(os.path.join(out, "client.csv"), b"name,email\n" + b"".join(fragment(r) + b"\n" for r in rows))
    write(os.path.join(out, "client.txt"), b"".join(r[1] + b"\n" for r in rows))
    row_of = {r[1]: i + 1 for i, r in enumerate(rows)}
    salt = hashlib.sha256(b"payload-cells/salt").digest()

    head = [b"note", b"form, ula", b'say "hi"']
    notes = [b"a, b", b'say "hi"', b"two\nlines", b"cr\r\nlf", b"", "caf\u00e9".encode(),
             b"tab\there", b"x"]
    formulas = [b'=HYPERLINK("http://evil.example/","click")', b"+cmd|' /C calc'!A0",
                b"@SUM(1)", b"-1+1", b"\tstarts with a tab", b"\rstarts with CR", b"=1+1",
                b"safe"]
    honest = [[notes[i % 8], formulas[i % 8], b"p%d" % i] for i in range(len(values))]
    pays = [fragment(f) for f in honest]
    write(os.path.join(out, "honest.pay"), fragment(head) + b"\n" + table(elements, pays, salt))
    json.dump({"head": [h.decode() for h in head],
               "rows": {v.decode(): [f.decode() for f in fs] for v, fs in zip(values, honest)}},
              open(os.path.join(out, "honest.json"), "w"))

    # Each crafted case: one value's payload (the others honest) or the head.
    crafted = [
        (3, b"x,y,z\nevil@example.org,1,2", "a line break that starts a row not in the input"),
        (3, b"x,y,z,extra", "a fourth column"),
        (3, b'x,y,"z', "an unterminated quote that would swallow the next row"),
        (3, b"x,y,\x1b[31mred\x1b[0m", "raw terminal escapes"),
        (3, b'x,y,"z"w', "bytes after a closing quote"),
        (3, b'x,y,z"w', "a bare quote"),
        (3, b"x,y", "a column short"),
        (3, b"x,y,z\r", "a bare CR"),
        (3, b"x,y,\x00", "a NUL"),
        (3, b'x,y,"a\x07b"', "a control byte inside quotes"),
        (3, b"x,y,z\x7f", "DEL"),
        (0, b"note,form\x1b]0;owned\x07,say", "a head with terminal escapes"),
        (0, b'note,"form,say', "a head with an unterminated quote"),
    ]
    with open(os.path.join(out, "crafted"), "w") as m:
        for n, (i, p, what) in enumerate(crafted):
            h, ps = fragment(head), list(pays)
            if i == 0:
                h = p
            else:
                ps[i] = p
            write(os.path.join(out, "c%02d.pay" % n), h + b"\n" + table(elements, ps, salt))
            m.write("c%02d\t%d\t%s\n" % (n, row_of[values[i]] if i else 0, what))

    # Random payloads from the bytes that make structure, half of them
    # fragments of random fields (of bytes a field may hold), one a table.
    alphabet = b',"\r\n\t\x1b\x00=+-@ a'
    data = b',"\r\n\t=+-@ a'
    with open(os.path.join(out, "random"), "w") as m:
        for n in range(40):
            i = rng.randrange(len(values))
            if n % 2:
                p = fragment([bytes(rng.choice(data) for _ in range(rng.randrange(6)))
                              for _ in range(3)])
            else:
                p = bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 14)))
            ps = list(pays)
            ps[i] = p
            write(os.path.join(out, "r%02d.pay" % n), fragment(head) + b"\n" + table(elements, ps, salt))
            m.write("r%02d\t%d\t%s\n" % (n, row_of[values[i]], p.hex()))


if __name__ == "__main__":
    main()
