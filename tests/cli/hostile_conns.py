"""Hostile connections for tests/cli/test_hostile.sh: N connections to
HOST:PORT from the source address SRC, held for SECONDS and reopened as soon
as the server ends one, doing MODE:

  silent      connect and send nothing
  slow-hello  send a real TLS 1.3 ClientHello, one byte a second

Prints "MODE: N held, R reopened" at the end.  Usage:
  hostile_conns.py MODE N SECONDS SRC HOST PORT
"""
import select
import socket
import ssl
import sys
import time


def client_hello():
    """The first flight of a TLS 1.3 client, as bytes."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def main():
    mode, n, seconds, src, host, port = sys.argv[1:7]
    n, seconds, port = int(n), float(seconds), int(port)
    hello = client_hello() if mode == "slow-hello" else b""
    conns = {}  # socket -> bytes of the hello sent
    reopened = 0

    def dial():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((src, 0))
        s.connect((host, port))
        conns[s] = 0

    for _ in range(n):
        dial()
    end = time.monotonic() + seconds
    next_byte = time.monotonic()
    while time.monotonic() < end:
        ready, _, _ = select.select(list(conns), [], [], 0.1)
        for s in ready:
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:  # the server ended it: another takes its place
                del conns[s]
                s.close()
                dial()
                reopened += 1
        if hello and time.monotonic() >= next_byte:
            next_byte += 1.0
            for s, sent in list(conns.items()):
                if sent < len(hello):
                    try:
                        s.send(hello[sent:sent + 1])
                        conns[s] = sent + 1
                    except OSError:
                        pass
    for s in conns:
        s.close()
    print(f"{mode}: {n} held, {reopened} reopened")


if __name__ == "__main__":
    main()
