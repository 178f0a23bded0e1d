/*
 * A misbehaving partner for tests/cli/test_net.sh: speaks the frames of
 * net/net.h and the handshake of net/net_session.h, and breaks the
 * protocol in one chosen way, so that the real `shardpsi server` and `shardpsi client`
 * can be checked to fail cleanly.
 *
 * Usage: test_net_peer MODE [HOST:PORT]
 *   server-* modes listen on 127.0.0.1 (a free port, printed on stdout) and
 *   play a server for one client; client-* modes connect to HOST:PORT
 *   (plain TCP: the server under test runs with --no-tls).
 *   With PEER_TLS=CERT:KEY:PEERKEY in the environment, a client mode first
 *   runs TLS with that certificate and key, pinning the server's key
 *   fingerprint PEERKEY (the server under test runs with TLS then).
 *   client-hold-after-hello sends an acceptable HELLO, reads the ACCEPT,
 *   then only keepalives (every half second), and succeeds when the server
 *   ends the connection within 60 s, printing after how long;
 *   client-hello-close sends the HELLO and closes at once.
 *   client-announce-N announces N values and sends nothing more, and
 *   succeeds when no SETUP arrives within 3 s; client-keepalive-hold sends a
 *   keepalive every half second and no HELLO, client-slow-hello one byte of
 *   its HELLO a second: both succeed when the server ends the connection
 *   within 30 s.  server-bloom-k and server-gcs-div0 send a Bloom setup
 *   with 2^31-1 hash functions and a GCS setup with div 0 (otherwise
 *   honest), and succeed when the client answers with an ERROR frame.
 * Exit status: 0 when the peer under test behaved as expected as far as
 * this side can see (the test script checks the rest), 1 otherwise, with
 * "peer: MODE failed: why" on stderr.  Every mode closes its connection
 * before it exits (but client-killed-mid-request, which is killed), so that
 * a failure under LeakSanitizer reports why and not the receive buffer.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net.h"
#include "net_session.h"
#include "net_tls.h"
#include "app_clock.h"
#include "app_util.h"
#include "psi.h"
#include "test_msg.h"

#define PEER_N 3
/* The patience of this side: the --timeout test_net.sh gives every psi
 * server and client, so that a partner slowed down by a busy machine (a
 * sanitizer build) fails no check here sooner than anywhere else. */
#define PEER_TIMEOUT_MS 20000

/* Reports why a mode failed: `what` failed, with the connection's message
 * when it was the connection's.  Returns: 1, the exit status. */
static int peer_fail(const char *mode, const char *what, const psi_net_conn *c)
{
    fprintf(stderr, "peer: %s failed: %s%s%s\n", mode, what, c != NULL ? ": " : "",
            c != NULL ? c->err : "");
    return 1;
}

/* A 33-byte element whose x is >= p: invalid for every decoder. */
static void peer_bad_points(uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[33 * i] = 0x02;
        memset(out + 33 * i + 1, 0xff, 32);
    }
}

/* Reads the client's HELLO and answers an ACCEPT of `structure` for n
 * values.  Returns: 0 or -1 (the message in c->err). */
static int peer_accept_client(psi_net_conn *c, psi_net_handshake *hello, int structure,
                              uint64_t n)
{
    uint8_t *buf = NULL, out[PSI_NET_HANDSHAKE_BYTES];
    size_t len = 0;
    psi_net_handshake a;

    if (psi_net_recv(c, PSI_NET_FRAME_HELLO, PSI_NET_MSG_MAX, &buf, &len, NULL,
                         NULL) != 0 ||
        psi_net_handshake_decode(hello, buf, len, "the client", c->err, sizeof c->err) != 0) {
        free(buf);
        return -1;
    }
    free(buf);
    memset(&a, 0, sizeof a);
    a.version = PSI_NET_PROTOCOL_VERSION;
    a.reveal = hello->reveal;
    a.association = hello->association;
    a.structure = structure;
    a.fpr = PSI_APP_DEFAULT_FPR;
    a.n = n;
    a.suite = hello->suite;
    a.setup_clients = hello->n;
    psi_net_handshake_encode(out, &a);
    return psi_net_send(c, PSI_NET_FRAME_ACCEPT, out, sizeof out, NULL, NULL);
}

/* Appends a protobuf varint.  Returns: the new end. */
static uint8_t *peer_varint(uint8_t *p, uint64_t v)
{
    do {
        *p++ = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v != 0);
    return p;
}

/* Reads a protobuf varint at *p (no bounds: the input is the library's
 * own canonical setup). */
static uint64_t peer_read_varint(const uint8_t **p)
{
    uint64_t v = 0;
    for (int sh = 0;; sh += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            return v;
    }
}

/* An honest gcs or Bloom setup of PEER_N values for `clients` client
 * values, then made hostile: Bloom with 2^31-1 hash functions, GCS with div
 * 0 (openmined-p256: no suite header).  Returns: its length, or 0. */
static size_t peer_hostile_setup(uint8_t *out, size_t cap, int structure, uint64_t clients)
{
    static const char *const vals[PEER_N] = {"a", "b", "c"};
    psi_value v[PEER_N];
    psi_settings st;
    psi_setup_params p;
    psi_engine *e = NULL;
    size_t len = 0, bits_len;
    uint8_t *honest = NULL, inner[64], *q;
    const uint8_t *r, *bits;
    uint64_t hash_range = 0;

    for (int i = 0; i < PEER_N; i++) {
        v[i].data = (const uint8_t *)vals[i];
        v[i].len = 1;
    }
    psi_settings_default(&st);
    st.role = PSI_ROLE_SERVER;
    memset(&p, 0, sizeof p);
    p.structure = structure;
    p.fpr = PSI_APP_DEFAULT_FPR;
    p.num_client_inputs = (int64_t)clients;
    if (psi_engine_create(&e, &st) != PSI_OK ||
        psi_setup_bound(&len, PSI_SUITE_OPENMINED_P256, &p, PEER_N) != PSI_OK ||
        (honest = malloc(len)) == NULL ||
        psi_server_create_setup(e, honest, &len, NULL, &p, v, PEER_N) != PSI_OK) {
        psi_engine_free(e);
        free(honest);
        return 0;
    }
    psi_engine_free(e);
    // The oneof member: tag, length, then its fields in order.
    r = honest + 1;
    (void)peer_read_varint(&r);
    if (structure == PSI_STRUCTURE_GCS) {
        if (*r == 0x08) {           // div
            r++;
            (void)peer_read_varint(&r);
        }
        if (*r == 0x10) {           // hash_range
            r++;
            hash_range = peer_read_varint(&r);
        }
    } else {
        r++;                        // num_hash_functions
        (void)peer_read_varint(&r);
    }
    r++;                            // bits
    bits_len = (size_t)peer_read_varint(&r);
    bits = r;
    q = inner;
    if (structure == PSI_STRUCTURE_GCS) {
        *q++ = 0x10;
        q = peer_varint(q, hash_range);
        *q++ = 0x1a;
    } else {
        *q++ = 0x08;
        q = peer_varint(q, 0x7fffffff);
        *q++ = 0x12;
    }
    q = peer_varint(q, bits_len);
    len = 0;
    if (cap >= 16 + (size_t)(q - inner) + bits_len) {
        uint8_t *o = out;
        *o++ = structure == PSI_STRUCTURE_GCS ? 0x12 : 0x1a;
        o = peer_varint(o, (uint64_t)(q - inner) + bits_len);
        memcpy(o, inner, (size_t)(q - inner));
        o += q - inner;
        memcpy(o, bits, bits_len);
        len = (size_t)(o + bits_len - out);
    }
    free(honest);
    return len;
}

/* A handshake of protocol version 1 (28 bytes: no suite, no
 * setup_clients): a raw ACCEPT or an any-structure HELLO of PEER_N values.
 * Returns: its length. */
static size_t peer_v1_handshake(uint8_t out[28], int accept)
{
    memset(out, 0, 28);
    memcpy(out, "SHARDPSI", 8);
    psi_app_store_be(out + 8, 1, 2);
    out[10] = 1;
    out[11] = accept ? PSI_STRUCTURE_RAW : PSI_NET_STRUCTURE_ANY;
    psi_app_store_be(out + 20, PEER_N, 8);
    return 28;
}

/* Sends a frame header claiming `len` payload bytes, and no payload. */
static int peer_send_header(psi_net_conn *c, int type, uint64_t len)
{
    uint8_t h[PSI_NET_HEADER_BYTES];

    h[0] = (uint8_t)type;
    psi_app_store_be(h + 1, len, 8);
    return write(c->fd, h, sizeof h) == (ssize_t)sizeof h ? 0 : -1;
}

/* After the handshake: receives the client's request, sends a setup
 * (server-invalid-points: an empty raw one, announced as n = 0;
 * server-bloom-k, server-gcs-div0: peer_hostile_setup) and a response of bad
 * points.  Returns: 0 when the client answered with an ERROR frame (not
 * DONE), else 1 (reported). */
static int peer_invalid_response(const char *mode, psi_net_conn *c,
                                 const psi_net_handshake *hello)
{
    static uint8_t setup[1 << 16];
    uint8_t *req = NULL, *resp = NULL, *pts = NULL;
    size_t setup_len = sizeof setup, req_len = 0, resp_len;
    int rc;

    if (psi_net_recv(c, PSI_NET_FRAME_REQUEST, 1 << 20, &req, &req_len, NULL, NULL) != 0)
        return peer_fail(mode, "receiving the request", c);
    free(req);
    req = NULL;
    if (strcmp(mode, "server-invalid-points") == 0)
        rc = tm_encode(setup, &setup_len, PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_SETUP_RAW, 0,
                       NULL, 0) != PSI_OK;
    else
        rc = (setup_len = peer_hostile_setup(setup, sizeof setup,
                                             strcmp(mode, "server-bloom-k") == 0
                                                 ? PSI_STRUCTURE_BLOOM_FILTER
                                                 : PSI_STRUCTURE_GCS,
                                             hello->n)) == 0;
    if (rc != 0)
        return peer_fail(mode, "encoding the setup", NULL);
    if (psi_net_send(c, PSI_NET_FRAME_SETUP, setup, setup_len, NULL, NULL) != 0)
        return peer_fail(mode, "sending the setup", c);
    // As many bad points as the client announced, so the frame is the
    // right size and only the points are wrong.
    resp_len = psi_response_bound(PSI_SUITE_OPENMINED_P256, (size_t)hello->n);
    resp = malloc(resp_len + 1);
    pts = malloc(33 * (size_t)hello->n + 1);
    if (resp == NULL || pts == NULL) {
        rc = peer_fail(mode, "out of memory for the response", NULL);
    } else {
        peer_bad_points(pts, (size_t)hello->n);
        if (tm_encode(resp, &resp_len, PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_RESPONSE, 0, pts,
                      (size_t)hello->n) != PSI_OK)
            rc = peer_fail(mode, "encoding the response", NULL);
        else if ((rc = psi_net_send(c, PSI_NET_FRAME_RESPONSE, resp, resp_len, NULL,
                                    NULL)) == PSI_NET_EPEER) {
            // The client refused the setup while this side was sending.
            fprintf(stderr, "peer: %s\n", c->err);
            rc = 0;
        } else if (rc != 0)
            rc = peer_fail(mode, "sending the response", c);
        else if ((rc = psi_net_recv(c, PSI_NET_FRAME_DONE, 0, &req, &req_len, NULL,
                                        NULL)) == 0)
            rc = peer_fail(mode, "the client sent DONE, not an error frame", NULL);
        else if (rc != PSI_NET_EPEER)
            rc = peer_fail(mode, "waiting for the client's error frame", c);
        else {
            fprintf(stderr, "peer: %s\n", c->err);
            rc = 0;
        }
    }
    free(req);
    free(resp);
    free(pts);
    return rc;
}

/* The hostile server modes. */
static int peer_server(const char *mode)
{
    char bound[160], err[256];
    int lfd, rc = 0;
    psi_net_conn c;
    psi_net_handshake hello;

    if (psi_net_listen(&lfd, bound, sizeof bound, "127.0.0.1:0", err, sizeof err) != 0) {
        fprintf(stderr, "peer: %s failed: listening: %s\n", mode, err);
        return 1;
    }
    printf("%s\n", strrchr(bound, ':') + 1);
    fflush(stdout);
    rc = psi_net_accept(&c, lfd, PEER_TIMEOUT_MS);
    close(lfd);
    if (rc != 0)
        return peer_fail(mode, "accepting the client", &c);
    if (strcmp(mode, "server-silent") == 0)
        sleep(30); // the client's --timeout ends the test first
    else if (strcmp(mode, "server-v1") == 0) {
        uint8_t v1[28], *buf = NULL;
        size_t len = 0;
        if (psi_net_recv(&c, PSI_NET_FRAME_HELLO, PSI_NET_MSG_MAX, &buf, &len, NULL, NULL) != 0 ||
            psi_net_send(&c, PSI_NET_FRAME_ACCEPT, v1, peer_v1_handshake(v1, 1), NULL, NULL) != 0)
            rc = peer_fail(mode, "the handshake", &c);
        free(buf);
        sleep(1);
    } else if (peer_accept_client(&c, &hello,
                                strcmp(mode, "server-bloom-k") == 0 ? PSI_STRUCTURE_BLOOM_FILTER
                                : strcmp(mode, "server-gcs-div0") == 0 ? PSI_STRUCTURE_GCS
                                                                        : PSI_STRUCTURE_RAW,
                                strcmp(mode, "server-invalid-points") == 0 ? 0 : PEER_N) != 0)
        rc = peer_fail(mode, "the handshake", &c);
    else if (strcmp(mode, "server-oversized") == 0) {
        (void)peer_send_header(&c, PSI_NET_FRAME_SETUP, (uint64_t)1 << 60);
        sleep(2);
    } else if (strcmp(mode, "server-invalid-points") == 0 ||
               strcmp(mode, "server-bloom-k") == 0 || strcmp(mode, "server-gcs-div0") == 0)
        rc = peer_invalid_response(mode, &c, &hello);
    else if (strcmp(mode, "server-close-after-accept") != 0)
        rc = peer_fail(mode, "unknown mode", NULL);
    psi_net_close(&c);
    return rc;
}

/* Sends an acceptable HELLO of n values (reveal).  Returns: 0 or -1 (the
 * message in c->err). */
static int peer_send_hello(psi_net_conn *c, uint64_t n)
{
    uint8_t out[PSI_NET_HANDSHAKE_BYTES];
    psi_net_handshake h;

    memset(&h, 0, sizeof h);
    h.version = PSI_NET_PROTOCOL_VERSION;
    h.reveal = 1;
    h.structure = PSI_NET_STRUCTURE_ANY;
    h.n = n;
    psi_net_handshake_encode(out, &h);
    return psi_net_send(c, PSI_NET_FRAME_HELLO, out, sizeof out, NULL, NULL) != 0 ? -1 : 0;
}

/* Sends the HELLO of a revealing client with n values and reads the
 * ACCEPT. */
static int peer_hello(psi_net_conn *c, uint64_t n)
{
    uint8_t *buf = NULL;
    size_t len = 0;

    if (peer_send_hello(c, n) != 0 ||
        psi_net_recv(c, PSI_NET_FRAME_ACCEPT, PSI_NET_MSG_MAX, &buf, &len, NULL,
                         NULL) != 0)
        return -1;
    free(buf);
    return 0;
}

/* client-keepalive-hold and client-slow-hello: holds the connection
 * without a HELLO (keepalives every half second, or the HELLO a byte a
 * second).  Returns: 0 when the server ended it within 30 s, else 1. */
static int peer_hold(const char *mode, psi_net_conn *c)
{
    static const uint8_t ka[PSI_NET_HEADER_BYTES] = {PSI_NET_FRAME_KEEPALIVE};
    uint8_t frame[PSI_NET_HEADER_BYTES + PSI_NET_HANDSHAKE_BYTES];
    psi_net_handshake h;
    double t0 = psi_app_now_ms();
    int slow = strcmp(mode, "client-slow-hello") == 0;

    memset(&h, 0, sizeof h);
    h.version = PSI_NET_PROTOCOL_VERSION;
    h.structure = PSI_NET_STRUCTURE_ANY;
    h.n = PEER_N;
    frame[0] = PSI_NET_FRAME_HELLO;
    psi_app_store_be(frame + 1, PSI_NET_HANDSHAKE_BYTES, 8);
    psi_net_handshake_encode(frame + PSI_NET_HEADER_BYTES, &h);
    for (size_t i = 0; psi_app_now_ms() - t0 < 30000; i++) {
        const uint8_t *p = slow ? frame + i % sizeof frame : ka;
        size_t n = slow ? 1 : sizeof ka;
        if (send(c->fd, p, n, MSG_NOSIGNAL) != (ssize_t)n) {
            fprintf(stderr, "peer: %s: the server ended the connection after %.1f s\n", mode,
                    (psi_app_now_ms() - t0) / 1000);
            return 0;
        }
        struct timespec ts = {slow ? 1 : 0, slow ? 0 : 500000000L};
        nanosleep(&ts, NULL);
    }
    return peer_fail(mode, "the server held the connection for 30 s", NULL);
}

/* client-hold-after-hello: an accepted handshake, then keepalives only.
 * Returns: 0 when the server ended the connection within 60 s, else 1. */
static int peer_hold_after_hello(const char *mode, psi_net_conn *c)
{
    double t0;

    if (peer_hello(c, PEER_N) != 0)
        return peer_fail(mode, "the handshake", c);
    t0 = psi_app_now_ms();
    while (psi_app_now_ms() - t0 < 60000) {
        uint8_t b;
        struct timespec ts = {0, 500000000L};
        psi_net_keepalive(c, 0);
        // Whatever the server sends (keepalives, an ERROR frame) is read and
        // dropped; its end of the connection ends the hold.
        ssize_t got = recv(c->fd, &b, 1, MSG_DONTWAIT);
        if (c->broken || got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
            fprintf(stderr, "peer: %s: the server ended the connection after %.1f s\n", mode,
                    (psi_app_now_ms() - t0) / 1000);
            return 0;
        }
        if (got > 0)
            continue;
        nanosleep(&ts, NULL);
    }
    return peer_fail(mode, "the server held the connection for 60 s", NULL);
}

/* client-announce-N: the HELLO of N values, and nothing more.  Returns: 0
 * when no SETUP frame arrived within 3 s, else 1. */
static int peer_announce(const char *mode, psi_net_conn *c)
{
    uint64_t n = strtoull(mode + strlen("client-announce-"), NULL, 10);
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc;

    if (peer_hello(c, n) != 0)
        return peer_fail(mode, "the handshake", c);
    c->timeout_ms = 3000;
    rc = psi_net_recv(c, PSI_NET_FRAME_SETUP, (size_t)1 << 40, &buf, &len, NULL, NULL);
    free(buf);
    if (rc == 0) {
        fprintf(stderr, "peer: %s failed: the server sent a setup of %zu bytes before the "
                "request\n", mode, len);
        return 1;
    }
    if (rc != PSI_NET_ETIMEOUT)
        return peer_fail(mode, "waiting", c);
    fprintf(stderr, "peer: %s: no setup within 3 s\n", mode);
    return 0;
}

/* The hostile client modes on connection c.  Returns: 0 or 1 (reported). */
static int peer_client_run(const char *mode, psi_net_conn *c)
{
    uint8_t pts[PEER_N * 33], req[PEER_N * 35 + 8], *buf = NULL;
    size_t req_len = sizeof req, len = 0;
    int rc;

    if (strcmp(mode, "client-garbage") == 0) {
        static const char junk[] = "GET / HTTP/1.0\r\n\r\n";
        if (write(c->fd, junk, sizeof junk - 1) < 0)
            return peer_fail(mode, "writing", NULL);
        sleep(1);
        return 0;
    }
    if (strcmp(mode, "client-killed-mid-request") == 0) {
        // A real request header for 1000 values, half of it, then SIGKILL.
        static uint8_t half[1000 * 35 / 2];
        if (peer_hello(c, 1000) != 0)
            return peer_fail(mode, "the handshake", c);
        if (peer_send_header(c, PSI_NET_FRAME_REQUEST, 1000 * 35 + 2) != 0 ||
            write(c->fd, half, sizeof half) != (ssize_t)sizeof half)
            return peer_fail(mode, "sending half a request", NULL);
        raise(SIGKILL);
    }
    if (strcmp(mode, "client-keepalive-hold") == 0 || strcmp(mode, "client-slow-hello") == 0)
        return peer_hold(mode, c);
    if (strcmp(mode, "client-v1") == 0) {
        uint8_t v1[28];
        if (psi_net_send(c, PSI_NET_FRAME_HELLO, v1, peer_v1_handshake(v1, 0), NULL, NULL) != 0)
            return peer_fail(mode, "sending the HELLO", c);
        rc = psi_net_recv(c, PSI_NET_FRAME_ACCEPT, PSI_NET_MSG_MAX, &buf, &len, NULL, NULL);
        free(buf);
        if (rc != PSI_NET_EPEER || strstr(c->err, "version 1, this side version 2") == NULL)
            return peer_fail(mode, "expected an ERROR frame naming both versions", c);
        fprintf(stderr, "peer: %s\n", c->err);
        return 0;
    }
    if (strncmp(mode, "client-announce-", 16) == 0)
        return peer_announce(mode, c);
    if (strcmp(mode, "client-hold-after-hello") == 0)
        return peer_hold_after_hello(mode, c);
    if (strcmp(mode, "client-hello-close") == 0)
        return peer_send_hello(c, PEER_N) != 0 ? peer_fail(mode, "sending the HELLO", c) : 0;
    if (peer_hello(c, PEER_N) != 0)
        return peer_fail(mode, "the handshake", c);
    if (strcmp(mode, "client-silent") == 0) {
        sleep(30); // the server's --timeout ends the test first
        return 0;
    }
    if (strcmp(mode, "client-oversized") == 0) {
        (void)peer_send_header(c, PSI_NET_FRAME_REQUEST, (uint64_t)1 << 60);
    } else if (strcmp(mode, "client-invalid-points") == 0) {
        peer_bad_points(pts, PEER_N);
        if (tm_encode(req, &req_len, PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_REQUEST, 1, pts,
                      PEER_N) != PSI_OK)
            return peer_fail(mode, "encoding the request", NULL);
        if (psi_net_send(c, PSI_NET_FRAME_REQUEST, req, req_len, NULL, NULL) != 0)
            return peer_fail(mode, "sending the request", c);
    } else {
        return peer_fail(mode, "unknown mode", NULL);
    }
    // The server must answer with an ERROR frame.
    rc = psi_net_recv(c, PSI_NET_FRAME_RESPONSE, 1 << 20, &buf, &len, NULL, NULL);
    free(buf);
    if (rc == 0)
        return peer_fail(mode, "the server sent a response, not an error frame", NULL);
    if (rc != PSI_NET_EPEER)
        return peer_fail(mode, "waiting for the server's error frame", c);
    fprintf(stderr, "peer: %s\n", c->err);
    return 0;
}

/* Connects and runs a client mode; the connection is closed whatever
 * happened. */
static int peer_client(const char *mode, const char *addr)
{
    psi_net_conn c;
    psi_net_tls *t = NULL;
    const char *env = getenv("PEER_TLS");
    char err[512], spec[2048], *key, *pin;
    int rc;

    if (env != NULL) {
        snprintf(spec, sizeof spec, "%s", env);
        if ((key = strchr(spec, ':')) == NULL || (pin = strchr(key + 1, ':')) == NULL)
            return peer_fail(mode, "PEER_TLS is not CERT:KEY:PEERKEY", NULL);
        *key++ = '\0';
        *pin++ = '\0';
        psi_net_tls_opts o = {.cert = spec, .key = key, .peer_key = pin};
        if (psi_net_tls_new(&t, &o, 0, err, sizeof err) != 0)
            return peer_fail(mode, err, NULL);
    }
    if (psi_net_connect(&c, addr, PEER_TIMEOUT_MS) != 0) {
        psi_net_tls_free(t);
        return peer_fail(mode, "connecting", &c);
    }
    if (t != NULL && psi_net_tls_handshake(&c, t, "localhost", psi_app_now_ms() + 20000) != 0)
        rc = peer_fail(mode, "TLS", &c);
    else
        rc = peer_client_run(mode, &c);
    psi_net_close(&c);
    psi_net_tls_free(t);
    return rc;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && strncmp(argv[1], "server-", 7) == 0)
        return peer_server(argv[1]);
    if (argc >= 3 && strncmp(argv[1], "client-", 7) == 0)
        return peer_client(argv[1], argv[2]);
    fprintf(stderr, "usage: %s server-MODE | client-MODE HOST:PORT\n", argv[0]);
    return 2;
}
