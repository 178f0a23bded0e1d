"""Every vector file through both APIs, on one engine and on shards: the
messages are the files' bytes, the results their results."""
import pytest

import shardpsi
import shardpsi.openmined as psi
from conftest import load, wire_cases

SHARDINGS = [None, 3]


def _parties(suite, c, shards):
    kw = dict(suite=suite, reveal=c["reveal_intersection"])
    if shards is not None:
        kw.update(threads=2, shards=shards)
    return (shardpsi.Server(bytes.fromhex(c["server_key"]), **kw),
            shardpsi.Client(bytes.fromhex(c["client_key"]), **kw))


@pytest.mark.parametrize("shards", SHARDINGS, ids=["engine", "3 shards"])
@pytest.mark.parametrize("suite,c", wire_cases())
def test_wire_pythonic(suite, c, shards):
    s, cl = _parties(suite, c, shards)
    setup = s.setup(c["server_inputs"], structure=c["data_structure"], fpr=c["fpr"],
                    num_client_inputs=c["num_client_inputs"])
    assert setup.hex() == c["server_setup"]
    req = cl.request(c["client_inputs"])
    assert req.hex() == c["request"]
    resp = s.process_request(bytes.fromhex(c["request"]))
    assert resp.hex() == c["response"]
    if c["reveal_intersection"]:
        assert cl.intersection(setup, resp) == c["intersection"]
    else:
        with pytest.raises(shardpsi.PsiError) as e:
            cl.intersection(setup, resp)
        assert e.value.name == "PSI_E_REVEAL_DISABLED"
    assert cl.intersection_size(setup, resp) == c["intersection_size"]


@pytest.mark.parametrize("threads", ["1", "3"], ids=["engine", "3 threads"])
@pytest.mark.parametrize("c", load("openmined-psi-2.0.6.json")["cases"],
                         ids=lambda c: c["name"])
def test_wire_openmined_names(c, threads, monkeypatch):
    monkeypatch.setenv("SHARDPSI_THREADS", threads)
    reveal = c["reveal_intersection"]
    s = psi.server.CreateFromKey(bytes.fromhex(c["server_key"]), reveal)
    cl = psi.client.CreateFromKey(bytes.fromhex(c["client_key"]), reveal)
    assert s.GetPrivateKeyBytes().hex() == c["server_key"]
    ds = {"raw": psi.DataStructure.RAW, "gcs": psi.DataStructure.GCS,
          "bloom_filter": psi.DataStructure.BLOOM_FILTER}[c["data_structure"]]
    setup = s.CreateSetupMessage(c["fpr"], c["num_client_inputs"], c["server_inputs"], ds)
    assert setup.SerializeToString().hex() == c["server_setup"]
    req = cl.CreateRequest(c["client_inputs"])
    assert req.SerializeToString().hex() == c["request"]
    # OpenMined's way: messages through their bytes and ParseFromString.
    parsed = psi.Request()
    parsed.ParseFromString(req.SerializeToString())
    resp = s.ProcessRequest(parsed)
    assert bytes(resp).hex() == c["response"]
    if reveal:
        assert cl.GetIntersection(setup, resp) == c["intersection"]
    assert cl.GetIntersectionSize(setup, bytes(resp)) == c["intersection_size"]


@pytest.mark.parametrize("shards", SHARDINGS, ids=["engine", "3 shards"])
@pytest.mark.parametrize("c", load("shardpsi-extra.json")["association_cases"],
                         ids=lambda c: c["name"])
def test_association(c, shards):
    s, cl = _parties("openmined-p256", dict(c, reveal_intersection=True), shards)
    setup, perm = s.setup_with_permutation(c["server_inputs"])
    assert setup.hex() == c["server_setup"]
    assert perm == c["permutation"]
    assert cl.request(c["client_inputs"]).hex() == c["request"]
    assert s.process_request(bytes.fromhex(c["request"])).hex() == c["response"]
    pairs = cl.association(bytes.fromhex(c["server_setup"]), bytes.fromhex(c["response"]),
                           c["permutation"])
    assert [list(p) for p in pairs] == c["association"]


def _rejections(op):
    return [c for c in load("shardpsi-extra.json")["rejection_cases"] if c["operation"] == op]


@pytest.mark.parametrize("c", _rejections("key"), ids=lambda c: c["name"])
def test_rejected_key(c):
    with pytest.raises(shardpsi.PsiError) as e:
        shardpsi.Server(bytes.fromhex(c["key"]))
    assert e.value.name == c["error"]


@pytest.mark.parametrize("shards", SHARDINGS, ids=["engine", "3 shards"])
@pytest.mark.parametrize("c", _rejections("process_request"), ids=lambda c: c["name"])
def test_rejected_request(c, shards):
    kw = dict(reveal=c["reveal_intersection"])
    if shards:
        kw.update(threads=2, shards=shards)
    s = shardpsi.Server(bytes.fromhex(c["server_key"]), **kw)
    with pytest.raises(shardpsi.PsiError) as e:
        s.process_request(bytes.fromhex(c["request"]))
    assert e.value.name == c["error"]
    assert e.value.code < 0


@pytest.mark.parametrize("shards", SHARDINGS, ids=["engine", "3 shards"])
@pytest.mark.parametrize("c", _rejections("intersection"), ids=lambda c: c["name"])
def test_rejected_intersection(c, shards):
    kw = dict(reveal=c["reveal_intersection"])
    if shards:
        kw.update(threads=2, shards=shards)
    cl = shardpsi.Client(bytes.fromhex(c["client_key"]), **kw)
    setup, resp = bytes.fromhex(c["server_setup"]), bytes.fromhex(c["response"])
    with pytest.raises(shardpsi.PsiError) as e:
        cl.intersection_size(setup, resp)
    assert e.value.name == c["error"]
    if c["reveal_intersection"]:
        with pytest.raises(shardpsi.PsiError) as e:
            cl.intersection(setup, resp)
        assert e.value.name == c["error"]


@pytest.mark.parametrize("c", _rejections("setup_params"), ids=lambda c: c["name"])
def test_rejected_setup_params(c):
    s = shardpsi.Server(bytes.fromhex(c["server_key"]))
    fpr = float("nan") if c["fpr"] == "NaN" else c["fpr"]
    with pytest.raises(shardpsi.PsiError) as e:
        s.setup(c["server_inputs"], structure=c["data_structure"], fpr=fpr,
                num_client_inputs=c["num_client_inputs"])
    assert e.value.name == c["error"]
