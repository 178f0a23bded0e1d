"""One party called from several Python threads gives what one thread
gives; 1,000 rounds do not grow the process."""
import threading

import shardpsi


def _rss_kib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    import os
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def test_one_party_from_many_threads():
    for shards in (None, 3):
        kw = {} if shards is None else dict(threads=2, shards=shards)
        s = shardpsi.Server(**kw)
        c = shardpsi.Client(**kw)
        setup = s.setup([f"v{i}" for i in range(0, 400, 2)], structure="raw")
        sets = [[f"v{i}" for i in range(t, 400, 3)] for t in range(8)]
        want = []
        for vals in sets:
            want.append(sorted(c.intersection(setup, s.process_request(c.request(vals)))))
        got = [None] * len(sets)
        errors = []

        def run(t):
            try:
                for _ in range(5):
                    r = s.process_request(c.request(sets[t]))
                    got[t] = sorted(c.intersection(setup, r))
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(t,)) for t in range(len(sets))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        assert got == want


def test_no_growth_over_1000_rounds():
    s, c = shardpsi.Server(), shardpsi.Client()
    server_vals = [f"s{i}" for i in range(50)]
    client_vals = [f"s{i}" for i in range(0, 100, 2)]

    def rounds(n):
        for _ in range(n):
            setup = s.setup(server_vals, structure="gcs", num_client_inputs=50)
            resp = s.process_request(c.request(client_vals))
            assert c.intersection_size(setup, resp) == 25
            try:
                s.process_request(b"\x0a\x05")  # a failure's path too
            except shardpsi.PsiError:
                pass

    rounds(200)
    before = _rss_kib()
    rounds(1000)
    grown = _rss_kib() - before
    assert grown < 4096, f"the process grew by {grown} KiB over 1000 rounds"
