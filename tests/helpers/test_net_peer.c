/*
 * A misbehaving partner for tests/cli/test_net.sh: speaks the frames of
 * net/net.h and the handshake of net/net_session.h, and breaks the
 * protocol in one chosen way, so that the real `shardpsi server` and `shardpsi client`
 * can be checked to fail cleanly.
 *
 * Usage: test_net_peer MODE [HOST:PORT]
 *   server-* modes listen on 127.0.0.1 (a free port, printed on stdout) and
 *   play a server for one client; client-* modes connect to HOST:PORT.
 * Exit status: 0 when the peer under test behaved as expected as far as
 * this side can see (the test script checks the rest), 1 otherwise, with
 * "peer: MODE failed: why" on stderr.  Every mode closes its connection
 * before it exits (but client-killed-mid-request, which is killed), so that
 * a failure under LeakSanitizer reports why and not the receive buffer.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"
#include "net_session.h"
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

/* Reads the client's HELLO and answers a raw, revealing ACCEPT for PEER_N
 * values.  Returns: 0 or -1 (the message in c->err). */
static int peer_accept_client(psi_net_conn *c, psi_net_handshake *hello)
{
    uint8_t *buf = NULL, out[PSI_NET_HANDSHAKE_MAX_BYTES];
    size_t len = 0, out_len;
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
    a.structure = PSI_STRUCTURE_RAW;
    a.fpr = PSI_APP_DEFAULT_FPR;
    a.n = PEER_N;
    a.suite = hello->suite;
    out_len = psi_net_handshake_encode(out, &a);
    return psi_net_send(c, PSI_NET_FRAME_ACCEPT, out, out_len, NULL, NULL);
}

/* Sends a frame header claiming `len` payload bytes, and no payload. */
static int peer_send_header(psi_net_conn *c, int type, uint64_t len)
{
    uint8_t h[PSI_NET_HEADER_BYTES];

    h[0] = (uint8_t)type;
    psi_app_store_be(h + 1, len, 8);
    return write(c->fd, h, sizeof h) == (ssize_t)sizeof h ? 0 : -1;
}

/* server-invalid-points after the handshake: an empty raw setup, then a
 * response of bad points to the client's request.  Returns: 0 when the
 * client answered with an ERROR frame (not DONE), else 1 (reported). */
static int peer_invalid_response(const char *mode, psi_net_conn *c,
                                 const psi_net_handshake *hello)
{
    uint8_t setup[64], *req = NULL, *resp = NULL, *pts = NULL;
    size_t setup_len = sizeof setup, req_len = 0, resp_len;
    int rc;

    if (tm_encode(setup, &setup_len, PSI_SUITE_OPENMINED_P256, PSI_MESSAGE_SETUP_RAW, 0, NULL,
                  0) != PSI_OK)
        return peer_fail(mode, "encoding the setup", NULL);
    if (psi_net_send(c, PSI_NET_FRAME_SETUP, setup, setup_len, NULL, NULL) != 0)
        return peer_fail(mode, "sending the setup", c);
    if (psi_net_recv(c, PSI_NET_FRAME_REQUEST, 1 << 20, &req, &req_len, NULL, NULL) != 0)
        return peer_fail(mode, "receiving the request", c);
    free(req);
    req = NULL;
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
        else if (psi_net_send(c, PSI_NET_FRAME_RESPONSE, resp, resp_len, NULL, NULL) != 0)
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
    else if (peer_accept_client(&c, &hello) != 0)
        rc = peer_fail(mode, "the handshake", &c);
    else if (strcmp(mode, "server-oversized") == 0) {
        (void)peer_send_header(&c, PSI_NET_FRAME_SETUP, (uint64_t)1 << 60);
        sleep(2);
    } else if (strcmp(mode, "server-invalid-points") == 0)
        rc = peer_invalid_response(mode, &c, &hello);
    else if (strcmp(mode, "server-close-after-accept") != 0)
        rc = peer_fail(mode, "unknown mode", NULL);
    psi_net_close(&c);
    return rc;
}

/* Sends the HELLO of a revealing client with PEER_N values and reads the
 * ACCEPT and the setup. */
static int peer_hello(psi_net_conn *c, uint64_t n)
{
    uint8_t out[PSI_NET_HANDSHAKE_MAX_BYTES], *buf = NULL;
    size_t len = 0, out_len;
    psi_net_handshake h;

    memset(&h, 0, sizeof h);
    h.version = PSI_NET_PROTOCOL_VERSION;
    h.reveal = 1;
    h.structure = PSI_NET_STRUCTURE_ANY;
    h.n = n;
    out_len = psi_net_handshake_encode(out, &h);
    if (psi_net_send(c, PSI_NET_FRAME_HELLO, out, out_len, NULL, NULL) != 0 ||
        psi_net_recv(c, PSI_NET_FRAME_ACCEPT, PSI_NET_MSG_MAX, &buf, &len, NULL,
                         NULL) != 0)
        return -1;
    free(buf);
    buf = NULL;
    if (psi_net_recv(c, PSI_NET_FRAME_SETUP, (size_t)1 << 40, &buf, &len, NULL,
                         NULL) != 0)
        return -1;
    free(buf);
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
            return peer_fail(mode, "the handshake and the setup", c);
        if (peer_send_header(c, PSI_NET_FRAME_REQUEST, 1000 * 35 + 2) != 0 ||
            write(c->fd, half, sizeof half) != (ssize_t)sizeof half)
            return peer_fail(mode, "sending half a request", NULL);
        raise(SIGKILL);
    }
    if (peer_hello(c, PEER_N) != 0)
        return peer_fail(mode, "the handshake and the setup", c);
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
    int rc;

    if (psi_net_connect(&c, addr, PEER_TIMEOUT_MS) != 0)
        return peer_fail(mode, "connecting", &c);
    rc = peer_client_run(mode, &c);
    psi_net_close(&c);
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
