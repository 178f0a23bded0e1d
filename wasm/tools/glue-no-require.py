#!/usr/bin/env python3
"""emcc --js-transform hook (wasm/meson.build): the module glue is an ES
module, where `require` does not exist, but libsodium's randombytes code
(an EM_ASM block) still calls require('crypto') as its last fallback when
Module.getRandomValue is unset.  In an ES module that call can only throw a
ReferenceError; bundlers, though, read it as an import of Node's crypto and
warn about it in a browser build.  This replaces the call with the same
throw.  js/module.mjs always passes getRandomValue, so the branch is never
taken.  Fails if the glue has any other require( call.
    glue-no-require.py FILE   (edits FILE in place)"""
import re
import sys

path = sys.argv[-1]
with open(path, encoding='utf-8') as f:
    text = f.read()
text, n = re.subn(r"""\brequire\(\s*(['"])crypto\1\s*\)""",
                  '(() => { throw new ReferenceError("require is not defined"); })()', text)
if n != 1:
    sys.exit(f"glue-no-require.py: {path}: expected one require('crypto'), found {n}")
if re.search(r'\brequire\s*\(', text):
    sys.exit(f"glue-no-require.py: {path}: a require( call is left in the ES module glue")
with open(path, 'w', encoding='utf-8') as f:
    f.write(text)
