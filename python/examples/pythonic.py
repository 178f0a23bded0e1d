"""The Pythonic API: keyword arguments, shards on a thread pool, and
exceptions carrying the library's code.  python/tests/test_examples.py runs
it; the README shows the lines between the markers."""
# README:begin
import shardpsi

server = shardpsi.Server(suite="ristretto255", threads=2, shards=8)
client = shardpsi.Client(suite="ristretto255")
setup = server.setup(["alice", "bob", b"\x00raw"], structure="raw")
response = server.process_request(client.request(["bob", "erin"]))
print(client.intersection(setup, response))              # [0]
try:
    server.process_request(b"\x7f\x02\x0a\x05")
except shardpsi.PsiError as e:
    print(e.name, e.field, e.offset)                     # PSI_E_MSG_TRUNCATED ...
# README:end
