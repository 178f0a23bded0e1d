#!/usr/bin/python3
"""A client that commits to nothing, for tests/cli/test_net_commit.sh.

It speaks the frames of net/net.h (a type byte, a big-endian u64 length,
the payload) and the 37-byte HELLO of net/net_session.h to a `shardpsi
server --no-tls`, and stops where a hostile or vanished client would:

  hello-close PORT N COUNT    COUNT connections each send a HELLO for N
                              values and read the ACCEPT, then all close
                              at once
  short-request PORT N        a HELLO for N values, then a REQUEST of 57
                              bytes; prints the server's ERROR message
  request-close PORT N FILE   a HELLO for N values, then the REQUEST of
                              FILE (from `shardpsi request`), then closes
  announce-hold PORT N SECS   a HELLO for N values, then keepalives for
                              SECS seconds; exits 0 if the server sent no
                              SETUP or ERROR meanwhile

Every HELLO asks for the intersection (reveal), suite openmined-p256, the
server's setup structure.  With $COMMIT_TLS_CERT and $COMMIT_TLS_KEY set,
every connection is TLS with that client certificate (an authenticated peer).  Exit status: 0 as described, 1 on a failure
(why on stderr).
"""
import os
import socket
import ssl
import struct
import sys
import time

HELLO, ACCEPT, REQUEST, ERROR, KEEPALIVE = 1, 2, 4, 8, 9


def hello(n):
    """The HELLO payload: version 2, reveal, any structure, n values."""
    return (b"SHARDPSI" + struct.pack(">HBBQQBQ", 2, 1, 255, 0, n, 0, 0))


def send(s, kind, payload):
    s.sendall(struct.pack(">BQ", kind, len(payload)) + payload)


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        got = s.recv(n - len(buf))
        if not got:
            raise EOFError("the server closed the connection")
        buf += got
    return buf


def recv_frame(s):
    """The next frame that is not a keepalive: (type, payload)."""
    while True:
        kind, length = struct.unpack(">BQ", recv_exact(s, 9))
        if length > 1 << 20:
            raise ValueError("frame %d of %d bytes" % (kind, length))
        payload = recv_exact(s, length)
        if kind != KEEPALIVE:
            return kind, payload


def connect(port):
    """A connection to the server: plain TCP, or TLS 1.3 with the client
    certificate and key of $COMMIT_TLS_CERT and $COMMIT_TLS_KEY (the server
    pins their key; this side does not check the server's)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    cert, key = os.environ.get("COMMIT_TLS_CERT"), os.environ.get("COMMIT_TLS_KEY")
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.load_cert_chain(cert, key)
        s = ctx.wrap_socket(s)
    return s


def start(port, n):
    """Connects, sends the HELLO and reads the ACCEPT."""
    s = connect(port)
    send(s, HELLO, hello(n))
    kind, payload = recv_frame(s)
    if kind != ACCEPT:
        raise ValueError("expected an ACCEPT, got frame %d: %r" % (kind, payload[:200]))
    return s


def main(argv):
    mode, port, n = argv[1], int(argv[2]), int(argv[3])
    if mode == "hello-close":
        socks = [connect(port) for _ in range(int(argv[4]))]
        for s in socks:
            send(s, HELLO, hello(n))
        # Each HELLO accepted (the round past its handshake), then all gone.
        for s in socks:
            kind, payload = recv_frame(s)
            if kind != ACCEPT:
                raise ValueError("expected an ACCEPT, got frame %d" % kind)
        for s in socks:
            s.close()
        return 0
    if mode == "short-request":
        s = start(port, n)
        send(s, REQUEST, b"\x00" * 57)
        kind, payload = recv_frame(s)
        s.close()
        if kind != ERROR:
            raise ValueError("expected an ERROR, got frame %d" % kind)
        print(payload.decode("utf-8", "replace"))
        return 0
    if mode == "request-close":
        with open(argv[4], "rb") as f:
            req = f.read()
        s = start(port, n)
        send(s, REQUEST, req)
        s.close()
        return 0
    if mode == "announce-hold":
        s = start(port, n)
        s.settimeout(0.5)
        end = time.monotonic() + float(argv[4])
        while time.monotonic() < end:
            send(s, KEEPALIVE, b"")
            try:
                head = s.recv(9)
            except socket.timeout:
                continue
            if not head:
                raise EOFError("the server closed the connection")
            if head[0] != KEEPALIVE:
                raise ValueError("the server sent frame %d" % head[0])
        s.close()
        return 0
    raise ValueError("unknown mode " + mode)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (OSError, EOFError, ValueError) as e:
        print("commit_peer: %s failed: %s" % (sys.argv[1], e), file=sys.stderr)
        sys.exit(1)
