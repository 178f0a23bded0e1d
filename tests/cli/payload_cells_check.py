#!/usr/bin/env python3
"""Checks a client's output of match --payloads (or client --payloads) made
with payload_craft.py's tables, read back with Python's csv module:

    payload_cells_check.py OUT csv|lines RAW DIR [ROW HEX]

OUT must hold exactly the client's matched rows (every client row whose
email is a server value, in input order), each with its own columns and
the head's three, no more and no fewer; each cell the value the payload
holds, with a ' before a cell that begins with =, +, -, @, a tab or CR
unless RAW is 1.  In csv mode there is first the header (the client's,
then the head's names, neutralised alike); in lines mode no header and the
tab as the separator.  ROW and HEX: the row whose payload is HEX instead of
the honest one (its cells are Python's reading of it).
"""
import csv
import io
import json
import sys


def neutral(v, raw):
    return v if raw or not v or v[0] not in "=+-@\t\r" else "'" + v


def main():
    out, mode, raw, d = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
    h = json.load(open(d + "/honest.json"))
    pays = dict(h["rows"])
    with open(d + "/client.csv", newline="", encoding="utf-8") as f:
        crows = list(csv.reader(f))
    if len(sys.argv) > 5:
        email = crows[int(sys.argv[5])][1]
        p = bytes.fromhex(sys.argv[6]).decode("utf-8")
        try:
            got = list(csv.reader(io.StringIO(p, newline=""), strict=True))
        except csv.Error as e:
            got = [str(e)]
        if len(got) != 1 or len(got[0]) != len(h["head"]):
            print("%s: accepted %r, which Python reads as %r" % (out, p, got))
            return 1
        pays[email] = got[0]
    want = []
    if mode == "csv":
        want.append(crows[0] + [neutral(x, raw) for x in h["head"]])
        want += [r + [neutral(x, raw) for x in pays[r[1]]] for r in crows[1:] if r[1] in pays]
        delim = ","
    else:
        want += [[r[1]] + [neutral(x, raw) for x in pays[r[1]]] for r in crows[1:] if r[1] in pays]
        delim = "\t"
    with open(out, newline="", encoding="utf-8") as f:
        got = list(csv.reader(f, delimiter=delim, strict=True))
    if got != want:
        print("%s: %d records, %d expected; first difference:" % (out, len(got), len(want)))
        for a, b in zip(got + [None] * len(want), want + [None] * len(got)):
            if a != b:
                print("  got  %r\n  want %r" % (a, b))
                break
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
