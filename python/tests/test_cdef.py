"""The package binds the C library in cffi's ABI mode, which checks nothing
against the headers: a declaration that drifts from psi.h would pass
arguments wrongly and go unnoticed.  This compares every function and
struct the package declares (shardpsi._native.CDEF) with psi.h and
psi_shard.h of this tree: the same return type, parameter types (names
aside; an array parameter as the pointer it is) and struct fields."""
import re

import pytest

from conftest import ROOT
from shardpsi._native import CDEF

HEADERS = [ROOT / "psi" / "include" / "psi.h", ROOT / "shard" / "include" / "psi_shard.h"]


def strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def norm_type(t):
    t = re.sub(r"\s*\*\s*", "*", t.strip())
    return re.sub(r"\s+", " ", t)


def param_type(p):
    p = " ".join(p.split())
    if p in ("", "void"):
        return None
    m = re.match(r"^(.*?)\b(\w+)\s*(\[[^\]]*\])?$", p)
    assert m and m.group(1).strip(), f"cannot read parameter {p!r}"
    return norm_type(m.group(1) + ("*" if m.group(3) else ""))


def functions(text):
    out = {}
    text = re.sub(r"^\s*#[^\n]*", " ", strip_comments(text), flags=re.M)
    for m in re.finditer(r"^\s*(?:PSI_API\s+)?([A-Za-z_][\w \t\*]*?)\b(psi_\w+)\s*"
                         r"\(([^;{]*?)\)\s*;", text, flags=re.M):
        ret, name, params = m.groups()
        if "typedef" in ret:
            continue
        out[name] = (norm_type(ret), [t for t in map(param_type, params.split(",")) if t])
    return out


def structs(text):
    out = {}
    for m in re.finditer(r"typedef struct (\w+)\s*\{(.*?)\}\s*(\w+)\s*;", strip_comments(text),
                         flags=re.S):
        fields = [" ".join(f.split()) for f in m.group(2).split(";") if f.strip()]
        out[m.group(3)] = [re.sub(r"\s*\*\s*", "*", f) for f in fields]
    return out


HEADER_TEXT = "\n".join(h.read_text(encoding="utf-8") for h in HEADERS)
DECLARED = functions(CDEF)


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_function_matches_header(name):
    header = functions(HEADER_TEXT)
    assert name in header, f"{name} is not in psi.h or psi_shard.h"
    assert DECLARED[name] == header[name]


@pytest.mark.parametrize("name", sorted(structs(CDEF)))
def test_struct_matches_header(name):
    header = structs(HEADER_TEXT)
    assert name in header
    assert structs(CDEF)[name] == header[name]


def test_the_check_sees_a_drift():
    """The comparison is not vacuous: a swapped parameter is caught."""
    assert len(DECLARED) >= 30
    bad = functions("int psi_payload_open(int suite, const uint8_t *table, size_t len, "
                    "const uint8_t *elements, uint8_t *out, size_t k, size_t out_len, "
                    "size_t *lens);")
    assert bad["psi_payload_open"] != functions(HEADER_TEXT)["psi_payload_open"]
