#!/usr/bin/env python3
"""Checks that the code shown in the READMEs is the code of the examples.

A fenced block right after a line `<!-- snippet: PATH -->` must equal the
lines of PATH (relative to the repository) between its `README:begin` and
`README:end` marker lines, all such regions joined in order, with the
markers themselves left out.  Prints a line for each block checked and for
each mismatch, ends with "N passed, M failed" and exits non-zero on any
mismatch, a missing file or a marker without its pair.

    python3 scripts/check-snippets.py [README ...]   (default: the READMEs below)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = ["README.md", "wasm/README.md", "python/README.md"]
MARK = re.compile(r"^\s*<!-- snippet: (\S+) -->\s*$")


def regions(path):
    """The lines between README:begin and README:end markers of path."""
    out, inside = [], False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f.read().splitlines(), 1):
            if "README:begin" in line:
                if inside:
                    raise ValueError("%s:%d: README:begin inside a region" % (path, n))
                inside = True
            elif "README:end" in line:
                if not inside:
                    raise ValueError("%s:%d: README:end without README:begin" % (path, n))
                inside = False
            elif inside:
                out.append(line)
    if inside:
        raise ValueError("%s: README:begin without README:end" % path)
    if not out:
        raise ValueError("%s: no README:begin/README:end region" % path)
    return out


def blocks(path):
    """(line number, snippet path, block lines) for every marked block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        i += 1
        if not m:
            continue
        if i >= len(lines) or not lines[i].startswith("```"):
            yield i, m.group(1), None
            continue
        start, i = i + 1, i + 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        yield start, m.group(1), lines[start:i]
        i += 1


def main(argv):
    readmes = argv or DEFAULT
    passed = failed = 0
    for readme in readmes:
        path = os.path.join(ROOT, readme)
        for line, snippet, block in blocks(path):
            where = "%s:%d (%s)" % (readme, line, snippet)
            try:
                want = regions(os.path.join(ROOT, snippet))
            except (OSError, ValueError) as e:
                print("failed: %s: %s" % (where, e))
                failed += 1
                continue
            if block is None:
                print("failed: %s: no fenced block after the snippet marker" % where)
                failed += 1
            elif block != want:
                print("failed: %s: the block differs from the file's README regions" % where)
                for k, (a, b) in enumerate(zip(block + [""] * len(want), want + [""] * len(block))):
                    if a != b:
                        print("  first difference, block line %d:\n    README: %s\n    file:   %s"
                              % (k + 1, a, b))
                        break
                failed += 1
            else:
                print("ok: %s" % where)
                passed += 1
    if passed + failed == 0:
        print("failed: no snippet markers in %s" % ", ".join(readmes))
        failed = 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
