"""The vector files of the repository (vectors/), read by the tests."""
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VECTORS = ROOT / "vectors"
WIRE_FILES = ["openmined-psi-2.0.6.json", "shardpsi-p256-sswu.json", "shardpsi-ristretto255.json"]


def load(name):
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def wire_cases():
    """(file, suite, case) of every wire case of the three suite files."""
    out = []
    for f in WIRE_FILES:
        d = load(f)
        for c in d["cases"]:
            out.append(pytest.param(d.get("suite", "openmined-p256"), c, id=f"{f}:{c['name']}"))
    return out
