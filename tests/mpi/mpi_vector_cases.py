#!/usr/bin/env python3
"""Writes the cases of the committed vector files as inputs for the offline
commands, for tests/mpi/test_mpi.sh.

Usage: mpi_vector_cases.py VECTORS_DIR OUT_DIR
       mpi_vector_cases.py --payloads VECTORS_DIR OUT_DIR

Reads every VECTORS_DIR/*.json in the psi-wire-vectors/1 format (the
psi.js file and the suite files; other formats, such as shardpsi-extra.json,
are passed over) and, for each case whose inputs can be written one value
per line (app/app_input.h), makes OUT_DIR/cNNN/ holding:

  server.txt, client.txt   the inputs, each value then "\\n"
  sk, ck                   key files (hex, then " SUITE" for another suite
                           than openmined-p256; mode 0600)
  exp.setup, exp.req, exp.resp   the expected message bytes
  exp.count                the intersection size, then "\\n"
  exp.idx, exp.rows        (reveal cases) the intersection's client indices in
                           input order, and those client rows, as shardpsi match
                           writes them

and prints one line per written case on stdout:

  cNNN <TAB> suite <TAB> structure <TAB> fpr <TAB> num_client_inputs
       <TAB> reveal (1|0) <TAB> file:name

A value cannot be written as a line when it contains "\\n", ends in "\\r"
(dropped as a CRLF line end), or, being the first value of its list, starts
with a UTF-8 byte order mark (not part of the input).  Such cases are
skipped; the last line on stderr is "skipped N of M cases" and lists them.

With --payloads it reads the shardpsi-payload-vectors/1 files instead
(vectors/shardpsi-payloads.json, PROTOCOL.md §22) and, for each case whose
payloads can be a CSV file's columns, makes OUT_DIR/pNNN/ holding:

  server.txt, client.txt, sk, ck   as above
  server.csv               "value,p1,...,pk", then each server value and its
                           payload's fields (the payload cut at ","), so
                           --payload-columns p1,...,pk gives the payload
  exp.pay                  the payload file: "p1,...,pk\n", then the table
  exp.rows                 what match --payloads writes for the line input
                           against a raw setup: each matched client row, a
                           tab and its payload's fields joined by tabs
  tNN, tampered            each damaged table of the case as a payload file,
                           and a line "tNN <TAB> CODE <TAB> name" for each

and prints one line per written case:

  pNNN <TAB> suite <TAB> L <TAB> salt (hex) <TAB> k <TAB> file:name

A case is skipped when its payloads do not all have the same number of
fields (a CSV file's rows have one), or a value or payload holds a quote
or a line break, or a server value a comma.
"""
import json
import os
import sys

BOM = b"\xef\xbb\xbf"


def representable(values):
    for i, v in enumerate(values):
        if b"\n" in v or v.endswith(b"\r"):
            return False
        if i == 0 and v.startswith(BOM):
            return False
    return True


def csv_ready(values, pays):
    """The number of fields of every payload, or None when the case cannot
    be a CSV file whose columns give its payloads back unchanged."""
    k = {p.count(b",") + 1 for p in pays}
    if len(k) != 1:
        return None
    for v in values + pays:
        if any(c in v for c in (b'"', b"\n", b"\r")):
            return None
    if any(b"," in v for v in values) or (values and values[0].startswith(BOM)):
        return None
    return k.pop()


def documents(vdir, fmt):
    """(file name, document) of every VDIR/*.json of format fmt, by name."""
    for fn in sorted(os.listdir(vdir)):
        if not fn.endswith(".json"):
            continue
        with open(os.path.join(vdir, fn), encoding="utf-8") as f:
            doc = json.load(f)
        if isinstance(doc, dict) and doc.get("format") == fmt:
            yield fn, doc


def write_keys(d, c, suite):
    """The case's key files, sk and ck (hex, then " SUITE" but for the default)."""
    tail = "" if suite == "openmined-p256" else " " + suite
    write(os.path.join(d, "sk"), (c["server_key"] + tail + "\n").encode(), 0o600)
    write(os.path.join(d, "ck"), (c["client_key"] + tail + "\n").encode(), 0o600)


def payload_cases(vdir, out):
    n = total = 0
    skipped = []
    for fn, doc in documents(vdir, "shardpsi-payload-vectors/1"):
        for c in doc["cases"]:
            total += 1
            srv = [s.encode("utf-8") for s in c["server_inputs"]]
            cli = [s.encode("utf-8") for s in c["client_inputs"]]
            pays = [s.encode("utf-8") for s in c["payloads"]]
            k = csv_ready(srv, pays)
            if k is None or not representable(cli):
                skipped.append(fn + ":" + c["suite"] + "/" + c["name"])
                continue
            d = os.path.join(out, "p%03d" % n)
            os.makedirs(d, exist_ok=True)
            suite = c["suite"]
            write(os.path.join(d, "server.txt"), b"".join(v + b"\n" for v in srv))
            write(os.path.join(d, "client.txt"), b"".join(v + b"\n" for v in cli))
            write_keys(d, c, suite)
            head = b",".join(b"p%d" % (i + 1) for i in range(k))
            write(os.path.join(d, "server.csv"), b"value," + head + b"\n" +
                  b"".join(v + b"," + p + b"\n" for v, p in zip(srv, pays)))
            write(os.path.join(d, "exp.pay"), head + b"\n" + bytes.fromhex(c["table"]))
            # A raw setup's copy of a value matches one client copy, the first
            # (PROTOCOL.md §9.1); the vector says which values open a payload.
            rows, copies = b"", {}
            for v in srv:
                copies[v] = copies.get(v, 0) + 1
            for v, e in zip(cli, c["expected"]):
                if e is not None and copies.get(v, 0) > 0:
                    copies[v] -= 1
                    rows += v + b"\t" + e.encode("utf-8").replace(b",", b"\t") + b"\n"
            write(os.path.join(d, "exp.rows"), rows)
            lines = []
            for i, t in enumerate(x for x in doc.get("tampered", [])
                                  if x["suite"] == suite and x["of"] == c["name"]):
                write(os.path.join(d, "t%02d" % i), head + b"\n" + bytes.fromhex(t["table"]))
                lines.append("t%02d\t%s\t%s\n" % (i, t["error"], t["name"]))
            write(os.path.join(d, "tampered"), "".join(lines).encode("utf-8"))
            print("\t".join(["p%03d" % n, suite, str(int(c["pad_len"])), c["salt"], str(k),
                             fn + ":" + suite + "/" + c["name"]]))
            n += 1
    for s in skipped:
        sys.stderr.write("  skipped (payloads not one CSV row's columns): %s\n" % s)
    sys.stderr.write("skipped %d of %d cases\n" % (len(skipped), total))
    return 0


def write(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--payloads":
        return payload_cases(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    vdir, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    n = total = 0
    skipped = []
    for fn, doc in documents(vdir, "psi-wire-vectors/1"):
        suite = doc.get("suite", "openmined-p256")
        for c in doc["cases"]:
            total += 1
            srv = [s.encode("utf-8") for s in c["server_inputs"]]
            cli = [s.encode("utf-8") for s in c["client_inputs"]]
            if not (representable(srv) and representable(cli)):
                skipped.append(fn + ":" + c["name"])
                continue
            d = os.path.join(out, "c%03d" % n)
            os.makedirs(d, exist_ok=True)
            write(os.path.join(d, "server.txt"), b"".join(v + b"\n" for v in srv))
            write(os.path.join(d, "client.txt"), b"".join(v + b"\n" for v in cli))
            write_keys(d, c, suite)
            write(os.path.join(d, "exp.setup"), bytes.fromhex(c["server_setup"]))
            write(os.path.join(d, "exp.req"), bytes.fromhex(c["request"]))
            write(os.path.join(d, "exp.resp"), bytes.fromhex(c["response"]))
            write(os.path.join(d, "exp.count"), b"%d\n" % c["intersection_size"])
            reveal = bool(c["reveal_intersection"])
            if reveal:
                idx = sorted(c["intersection"])
                write(os.path.join(d, "exp.idx"), b"".join(b"%d\n" % i for i in idx))
                write(os.path.join(d, "exp.rows"), b"".join(cli[i] + b"\n" for i in idx))
            print("\t".join([
                "c%03d" % n, suite, c["data_structure"], repr(float(c["fpr"])),
                str(c["num_client_inputs"]), "1" if reveal else "0",
                fn + ":" + c["name"]]))
            n += 1
    for s in skipped:
        sys.stderr.write("  skipped (not one value per line): %s\n" % s)
    sys.stderr.write("skipped %d of %d cases\n" % (len(skipped), total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
