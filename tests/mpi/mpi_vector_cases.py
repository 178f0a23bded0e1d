#!/usr/bin/env python3
"""Writes the cases of the committed vector files as inputs for the offline
commands, for tests/mpi/test_mpi.sh.

Usage: mpi_vector_cases.py VECTORS_DIR OUT_DIR

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


def write(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    vdir, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    n = total = 0
    skipped = []
    for fn in sorted(os.listdir(vdir)):
        if not fn.endswith(".json"):
            continue
        with open(os.path.join(vdir, fn), encoding="utf-8") as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or doc.get("format") != "psi-wire-vectors/1":
            continue
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
            tail = "" if suite == "openmined-p256" else " " + suite
            write(os.path.join(d, "sk"), (c["server_key"] + tail + "\n").encode(), 0o600)
            write(os.path.join(d, "ck"), (c["client_key"] + tail + "\n").encode(), 0o600)
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
