"""The round as OpenMined PSI's own Python example writes it: messages
serialised to bytes and parsed back into ServerSetup, Request and Response
objects between the parties, keys exported and reloaded.  Only the import
differs from a script for openmined_psi."""
import shardpsi.openmined as psi

reveal_intersection = True
client_items = ["Element " + str(i) for i in range(1000)]
server_items = ["Element " + str(2 * i) for i in range(10000)]
fpr = 1.0 / (1000000000)

c = psi.client.CreateWithNewKey(reveal_intersection)
s = psi.server.CreateWithNewKey(reveal_intersection)
s = psi.server.CreateFromKey(s.GetPrivateKeyBytes(), reveal_intersection)

setup = psi.ServerSetup()
setup.ParseFromString(
    s.CreateSetupMessage(fpr, len(client_items), server_items, psi.DataStructure.GCS)
    .SerializeToString())
request = psi.Request()
request.ParseFromString(c.CreateRequest(client_items).SerializeToString())
response = psi.Response()
response.ParseFromString(s.ProcessRequest(request).SerializeToString())

intersection = c.GetIntersection(setup, response)
iset = set(intersection)
for idx in range(len(client_items)):
    if idx % 2 == 0:
        assert idx in iset
    else:
        assert idx not in iset
print(len(intersection), c.GetIntersectionSize(setup, response))   # 500 500
