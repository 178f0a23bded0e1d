"""The examples the READMEs show run and print what they say."""
import pathlib
import subprocess
import sys

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def run(name):
    p = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_openmined_names():
    assert run("openmined_names.py") == ["[0, 2]", "2"]


def test_openmined_style_script():
    assert run("openmined_style.py") == ["500 500"]


def test_pythonic():
    out = run("pythonic.py")
    assert out[0] == "[0]"
    assert out[1].startswith("PSI_E_MSG_TRUNCATED ")


def test_network():
    assert run("network.py") == ["[0, 2] ['bob', 'carol']"]
