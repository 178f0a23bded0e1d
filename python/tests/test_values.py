"""How values reach C: every form a caller may hold (a list, a tuple, a
generator, a pandas Series, numpy arrays of bytes and of str, mixed str
and bytes, text that is not ASCII) gives the same request as the plain list,
with and without numpy; a numpy array of fixed-width bytes is used where it
lies, not copied; and a value of another type is named."""
import subprocess
import sys

import pytest

import shardpsi
from shardpsi._core import Values
from shardpsi._native import ffi

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

KEY = bytes(range(1, 33))
ASCII = [f"value-{i}@example.org" for i in range(500)]
MIXED = ASCII[:200] + ["naïve", "日本", b"\xff\x00raw", bytearray(b"ba"), memoryview(b"mv")]


def setup_of(values):
    """The request of the values: in their order, so a value misplaced by
    the records would show."""
    return shardpsi.Client(KEY, threads=2).request(values)


def test_every_form_gives_the_list_setup():
    want = setup_of(ASCII)
    for form in (tuple(ASCII), iter(ASCII), (v for v in ASCII), pd.Series(ASCII),
                 np.array(ASCII), np.array(ASCII, dtype="S"), [v.encode() for v in ASCII]):
        assert setup_of(form) == want, type(form).__name__
    want = setup_of(list(MIXED))
    assert setup_of(tuple(MIXED)) == want
    assert setup_of(pd.Series(MIXED, dtype=object)) == want
    text = [v if isinstance(v, str) else bytes(v).decode("latin-1") for v in MIXED]
    assert setup_of(np.array(text)) == setup_of(text)  # dtype U: UTF-8 encoded at once


def test_fixed_width_bytes_are_not_copied():
    a = np.array([b"alice", b"bob", b"carol-longer"], dtype="S")
    v = Values(a)
    assert int(ffi.cast("uintptr_t", v._buf)) == a.__array_interface__["data"][0]
    assert (v.n, v.longest) == (3, 12)
    assert [(v.ptr[i].len) for i in range(3)] == [5, 3, 12]
    assert setup_of(a) == setup_of(["alice", "bob", "carol-longer"])
    assert Values(np.array([], dtype="S3")).n == 0


def test_without_numpy_the_same_bytes():
    """A process that has not loaded numpy builds the records in Python."""
    code = ("import sys; sys.modules.pop('numpy', None)\n"
            "import shardpsi\n"
            "c = shardpsi.Client(bytes(range(1, 33)), threads=2)\n"
            "print(c.request(%r).hex())" % (list(MIXED[:200]) + ["naïve"],))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == setup_of(list(MIXED[:200]) + ["naïve"]).hex()


def test_a_bad_value_is_named():
    for bad, at in ((["a", 3, "b"], 1), (["a", b"b", None], 2), ([1.5], 0)):
        with pytest.raises(TypeError, match=f"value {at} is a"):
            Values(bad)
    with pytest.raises(TypeError, match="not one str"):
        Values("abc")
    with pytest.raises(TypeError, match="not one bytes"):
        Values(b"abc")
    assert Values([]).n == 0 and Values(iter([])).n == 0
