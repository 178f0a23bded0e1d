"""A script in OpenMined PSI's Python API (openmined_psi), run on shardpsi:
only its import differs.  python/tests/test_examples.py runs it; the
README shows the lines between the markers."""
# README:begin
import shardpsi.openmined as psi

server = psi.server.CreateWithNewKey(True)
client = psi.client.CreateWithNewKey(True)
setup = server.CreateSetupMessage(1e-9, 3, ["alice", "bob", "carol"], psi.DataStructure.GCS)
response = server.ProcessRequest(client.CreateRequest(["bob", "dave", "carol"]))
print(sorted(client.GetIntersection(setup, response)))   # [0, 2]
print(client.GetIntersectionSize(setup, response))       # 2
# README:end
