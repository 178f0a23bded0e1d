"""A round over the network: serve() on a thread, connect() to it, both
from this package, in plain TCP on loopback (a round between two
organisations runs over TLS: see the README).  Either side may be the C
command instead.  python/tests/test_examples.py runs it; the README shows
the lines between the markers."""
# README:begin
import threading
import shardpsi

ready, where = threading.Event(), []
def listening(host, port):
    where.append(f"{host}:{port}")
    ready.set()
threading.Thread(target=shardpsi.serve, args=(["alice", "bob", "carol"],),
                 kwargs=dict(reveal=True, no_tls=True, on_listening=listening)).start()
ready.wait()
result = shardpsi.connect(where[0], ["bob", "dave", "carol"], no_tls=True)
print(result.indices, result.values)                     # [0, 2] ['bob', 'carol']
# README:end
