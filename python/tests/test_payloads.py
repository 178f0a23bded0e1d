"""Payload tables (PROTOCOL.md §22) through the Pythonic API: every case of
vectors/shardpsi-payloads.json (written by the independent
vectors/payload-ref.py) rebuilt byte for byte from its keys and salt and
opened after a round, on one engine and on shards; every tampered table
refused with its code; bad arguments."""
import pytest

import shardpsi
from conftest import load

DOC = load("shardpsi-payloads.json")
SHAPES = [pytest.param({}, id="one-engine"), pytest.param({"threads": 2, "shards": 3}, id="shards")]


def case_params():
    return [pytest.param(c, id=f"{c['suite']}:{c['name']}") for c in DOC["cases"]]


def as_list(text):
    # The vector file writes the lists as Python literals of str.
    import ast
    return ast.literal_eval(text) if isinstance(text, str) else text


def round_for(c, **kw):
    server = shardpsi.Server(bytes.fromhex(c["server_key"]), suite=c["suite"], **kw)
    client = shardpsi.Client(bytes.fromhex(c["client_key"]), suite=c["suite"], **kw)
    sv, cv = as_list(c["server_inputs"]), as_list(c["client_inputs"])
    setup = server.setup(sv, structure="raw")
    response = server.process_request(client.request(cv))
    return server, client, sv, setup, response


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("c", case_params())
def test_vector_table_and_opening(c, shape):
    server, client, sv, setup, response = round_for(c, **shape)
    table = server.payload_table(sv, as_list(c["payloads"]), pad_to=c["pad_len"],
                                 salt=bytes.fromhex(c["salt"]))
    assert table.hex() == c["table"]
    # Every client element, as the vectors give one result each (a value
    # twice in the client's set matches twice; the raw intersection names
    # it once): None where no record has its tag.
    every = range(len(as_list(c["client_inputs"])))
    opened = client.payloads(table, response, every)
    assert [None if p is None else p.decode("utf-8") for p in opened] == c["expected"]
    idx = sorted(client.intersection(setup, response))
    assert client.payloads(table, response, idx) == [opened[i] for i in idx]


@pytest.mark.parametrize("x", [pytest.param(x, id=f"{x['suite']}:{x['name']}")
                               for x in DOC["tampered"]])
def test_tampered_table_refused(x):
    base = next(c for c in DOC["cases"] if c["suite"] == x["suite"] and c["name"] == x["of"])
    _, client, _, setup, response = round_for(base)
    idx = sorted(client.intersection(setup, response))
    with pytest.raises(shardpsi.PsiError) as e:
        client.payloads(bytes.fromhex(x["table"]), response, idx)
    assert e.value.name == x["error"]


def test_fresh_salt_and_bad_arguments():
    server = shardpsi.Server()
    a = server.payload_table(["a", "b"], ["x", "yy"])
    b = server.payload_table(["a", "b"], ["x", "yy"])
    assert a[24:56] != b[24:56] and len(a) == len(b)
    with pytest.raises(ValueError, match="one payload a value"):
        server.payload_table(["a", "b"], ["x"])
    with pytest.raises(ValueError, match="32 bytes"):
        server.payload_table(["a"], ["x"], salt=b"short")
    with pytest.raises(shardpsi.PsiError) as e:
        server.payload_table(["a", "b"], ["x", "yy"], pad_to=1)
    assert e.value.name == "PSI_E_PAYLOAD_LENGTH" and e.value.index == 1
    with pytest.raises(shardpsi.PsiError) as e:
        server.payload_table(["a", "b", "a"], ["x", "y", "z"])
    assert e.value.name == "PSI_E_PAYLOAD_DUPLICATE" and e.value.index == 2
    with pytest.raises(ValueError, match="past the largest"):
        server.payload_table(["a"], ["x"], pad_to=(1 << 20) + 1)
    with pytest.raises(TypeError):
        server.payload_table(["a"], [5])
    client = shardpsi.Client()
    response = server.process_request(client.request(["a"]))
    with pytest.raises(ValueError, match="not one of the response's 1"):
        client.payloads(a, response, [3])
    # A table of another key: the matched record is not found (None).
    setup = server.setup(["a", "b"], structure="raw")
    other = shardpsi.Server().payload_table(["a", "b"], ["x", "yy"])
    assert client.payloads(other, response, client.intersection(setup, response)) == [None]
