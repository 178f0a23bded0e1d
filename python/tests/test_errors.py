"""Bad input from Python is an exception, never a crash: wrong types,
malformed messages (with the library's code, name and place), keys out of
range, messages of another suite."""
import pytest

import shardpsi
import shardpsi.openmined as psi


def test_values_must_be_str_or_bytes():
    s = shardpsi.Server()
    with pytest.raises(TypeError, match="value 1 is a int"):
        s.setup(["a", 2, "c"])
    with pytest.raises(TypeError, match="iterable of str or bytes"):
        s.setup("abc")
    with pytest.raises(TypeError):
        shardpsi.Client().request(None)


def test_values_any_iterable_and_bytes():
    s, c = shardpsi.Server(), shardpsi.Client()
    setup = s.setup((v for v in [b"a", "b", bytearray(b"c")]), structure="raw")
    resp = s.process_request(c.request(iter(["c", b"x", memoryview(b"a")])))
    assert sorted(c.intersection(setup, resp)) == [0, 2]


def test_messages_must_be_bytes():
    c = shardpsi.Client()
    with pytest.raises(TypeError, match="setup must be bytes"):
        c.intersection("setup", b"")
    with pytest.raises(TypeError, match="request must be bytes"):
        shardpsi.Server().process_request(12)


def test_malformed_messages_carry_code_and_place():
    s, c = shardpsi.Server(), shardpsi.Client()
    req = c.request(["a", "b"])
    with pytest.raises(shardpsi.PsiError) as e:
        s.process_request(req[:-3])
    assert e.value.name == "PSI_E_MSG_TRUNCATED" and e.value.code < 0
    assert e.value.field is not None and e.value.offset is not None
    bad = bytearray(req)
    bad[-1] ^= 0xFF  # the last point's x: no longer on the curve (most of the time)
    bad[-33] = 0x05  # and a prefix that is not 02 or 03
    with pytest.raises(shardpsi.PsiError) as e:
        s.process_request(bytes(bad))
    assert e.value.name.startswith("PSI_E_POINT_")
    assert e.value.index == 1


def test_key_out_of_range_and_suite_mismatch():
    with pytest.raises(shardpsi.PsiError) as e:
        shardpsi.Client(b"\xff" * 32)
    assert e.value.name == "PSI_E_KEY_OUT_OF_RANGE"
    with pytest.raises(shardpsi.PsiError) as e:
        psi.client.CreateFromKey(b"", True)
    assert e.value.name == "PSI_E_KEY_OUT_OF_RANGE"
    s = shardpsi.Server(suite="ristretto255")
    with pytest.raises(shardpsi.PsiError) as e:
        s.process_request(shardpsi.Client(suite="p256-sswu").request(["a"]))
    assert e.value.name == "PSI_E_SUITE_MISMATCH"
    with pytest.raises(ValueError, match="unknown suite"):
        shardpsi.Server(suite="p384")
    with pytest.raises(ValueError, match="unknown structure"):
        shardpsi.Server().setup(["a"], structure="tree")


def test_keys_round_trip_and_stay_per_object():
    s = shardpsi.Server(suite="ristretto255", threads=2, shards=4)
    assert s.shards == 4
    k = s.key
    assert len(k) == 32
    s2 = shardpsi.Server(k, suite="ristretto255")
    c = shardpsi.Client(suite="ristretto255")
    req = c.request(["x", "y"])
    assert s.process_request(req) == s2.process_request(req)
