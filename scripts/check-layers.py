#!/usr/bin/env python3
"""Checks that each layer includes only the headers of the layers below it
(README.md, Layout): psi/ <- shard/ <- app/ <- net/ <- cli/, bench/; mpi/
uses app/ and below; wasm/ uses shard/ and below.  A quoted #include of a
header found in another layer's folder that the table does not allow fails
with the file, the line and the rule.  Usage: check-layers.py [REPO_ROOT]"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))
BELOW = {
    'psi': [],
    'shard': ['psi'],
    'app': ['shard', 'psi'],
    'net': ['app', 'shard', 'psi'],
    'bench': ['app', 'shard', 'psi'],
    'cli': ['bench', 'net', 'app', 'shard', 'psi'],
    'mpi': ['app', 'shard', 'psi'],
    'wasm': ['shard', 'psi'],
}
# The benchmark programs of bench/ (not the command) use the public headers.
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def headers():
    """Maps each header's file name to the layer whose folder holds it."""
    owner = {}
    for layer in BELOW:
        for dirpath, _, files in os.walk(os.path.join(ROOT, layer)):
            for f in files:
                if f.endswith('.h'):
                    owner.setdefault(f, layer)
    return owner


def main():
    owner = headers()
    bad = 0
    checked = 0
    for layer, allowed in BELOW.items():
        for dirpath, _, files in os.walk(os.path.join(ROOT, layer)):
            if 'node_modules' in dirpath:
                continue
            for f in sorted(files):
                if not f.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding='utf-8') as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        checked += 1
                        name = os.path.basename(m.group(1))
                        to = owner.get(name)
                        if to is None or to == layer or to in allowed:
                            continue
                        print(f'{os.path.relpath(path, ROOT)}:{n}: includes {name} of '
                              f'{to}/, which {layer}/ may not use (it may use: '
                              f'{", ".join(allowed) or "nothing"})')
                        bad += 1
    if checked == 0:
        print('no #include found: wrong root?')
        return 1
    print(f'{checked} includes checked, {bad} across the layers')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
