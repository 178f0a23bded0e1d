/* Fuzzes the network commands' framing (net/net_frame.c, PROTOCOL.md §15.1):
 * the input after its first byte is what a peer sends, written into one
 * end of an AF_UNIX stream socketpair and followed by EOF; psi_net_recv
 * reads frames from the other end.  The first byte picks the expected
 * types and the payload limits of up to RECV_CALLS calls.  A small model
 * of the framing rules (frame_model) predicts each call's code and
 * payload, and every code must be one net.h documents for recv, with
 * *payload NULL and *len 0 on failure and a message in c->err.
 *
 * The whole input is written before the first receive, from this thread,
 * so it must fit the socket buffers: libFuzzer's -max_len keeps it below
 * FRAME_INPUT_MAX, and larger inputs are skipped. */
#include "fuzz_common.h"

#include "net.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#define RECV_CALLS 8
#define FRAME_INPUT_MAX ((size_t)1 << 16)
/* What the sender has written is all in the socket when recv starts, so a
 * timeout would be a bug; the limit only bounds a hang. */
#define FRAME_TIMEOUT_MS 1000

/* The payload limits a call may name (never so large that a hostile
 * length would make malloc abort under the sanitizers). */
static const size_t max_lens[] = { 0, 1, 28, PSI_NET_MSG_MAX, 65536, (size_t)1 << 20 };

/* Where the model stands in the peer's bytes. */
typedef struct frame_model {
    const uint8_t *s;
    size_t n, pos;
} frame_model;

static uint64_t load_be64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* Skips keepalives.  Returns: the type of the frame then at pos (0 when no
 * complete header is left); *len its payload length; or -1 when the
 * header at pos is one every receive refuses. */
static int model_head(frame_model *m, uint64_t *len)
{
    for (;;) {
        int type;

        if (m->n - m->pos < PSI_NET_HEADER_BYTES)
            return 0;
        type = m->s[m->pos];
        *len = load_be64(m->s + m->pos + 1);
        if (type < PSI_NET_FRAME_HELLO || type > PSI_NET_FRAME_KEEPALIVE ||
            (type == PSI_NET_FRAME_KEEPALIVE && *len != 0) ||
            (type == PSI_NET_FRAME_ERROR && *len > PSI_NET_MSG_MAX))
            return -1;
        if (type != PSI_NET_FRAME_KEEPALIVE)
            return type;
        m->pos += PSI_NET_HEADER_BYTES;
    }
}

/* What psi_net_recv(expect, max_len) must do next.  Returns: the code.
 * Out: *off, *len, the payload's place in the stream on success. */
static int model_recv(frame_model *m, int expect, size_t max_len, size_t *off, size_t *len)
{
    uint64_t plen = 0;
    size_t left;
    int type = model_head(m, &plen);

    *off = *len = 0;
    if (type == 0)
        return PSI_NET_ECLOSED; // EOF inside or before a header
    if (type < 0)
        return PSI_NET_EFRAME;
    left = m->n - m->pos - PSI_NET_HEADER_BYTES;
    if (type == PSI_NET_FRAME_ERROR) {
        if (plen > left)
            return PSI_NET_ECLOSED;
        m->pos += PSI_NET_HEADER_BYTES + (size_t)plen;
        return PSI_NET_EPEER;
    }
    if (type != expect || plen > max_len)
        return PSI_NET_EFRAME; // the frame stays for the next call
    if (plen > left)
        return PSI_NET_ECLOSED;
    *off = m->pos + PSI_NET_HEADER_BYTES;
    *len = (size_t)plen;
    m->pos += PSI_NET_HEADER_BYTES + (size_t)plen;
    return PSI_NET_OK;
}

/* Writes the peer's bytes and EOF.  Returns: 0, or -1 when they do not fit
 * the socket buffer (the input is skipped). */
static int feed(int fd, const uint8_t *s, size_t n)
{
    int buf = (int)(4 * FRAME_INPUT_MAX);
    size_t done = 0;

    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
        return -1;
    while (done < n) {
        ssize_t w = send(fd, s + done, n - done, MSG_NOSIGNAL);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    return shutdown(fd, SHUT_WR);
}

/* One receive and its checks.  Returns: the code. */
static int recv_one(psi_net_conn *c, frame_model *m, int expect, size_t max_len)
{
    const char *fn = "psi_net_recv";
    uint8_t *payload = (uint8_t *)&payload; // not NULL: recv must clear it
    size_t len = SIZE_MAX, off, want_len;
    int want = model_recv(m, expect, max_len, &off, &want_len);
    int rc;

    c->err[0] = '\0';
    rc = psi_net_recv(c, expect, max_len, &payload, &len, NULL, NULL);
    if (rc != PSI_NET_OK && rc != PSI_NET_ETIMEOUT && rc != PSI_NET_ECLOSED &&
        rc != PSI_NET_EIO && rc != PSI_NET_EFRAME && rc != PSI_NET_EPEER &&
        rc != PSI_NET_ENOMEM) {
        fprintf(stderr, "fuzz: %s returned %d: not a code documented for recv\n", fn, rc);
        abort();
    }
    if (rc != want) {
        fprintf(stderr, "fuzz: %s(expect %d, max_len %zu) returned %d, the framing rules give %d"
                " (%s)\n", fn, expect, max_len, rc, want, c->err);
        abort();
    }
    if (memchr(c->err, '\0', sizeof c->err) == NULL) {
        fprintf(stderr, "fuzz: %s left c->err unterminated\n", fn);
        abort();
    }
    if (rc != PSI_NET_OK) {
        if (payload != NULL || len != 0 || c->err[0] == '\0') {
            fprintf(stderr, "fuzz: %s returned %d with payload %p, len %zu, err '%s'\n", fn, rc,
                    (void *)payload, len, c->err);
            abort();
        }
        return rc;
    }
    if (payload == NULL || len != want_len || len > max_len ||
        (len > 0 && memcmp(payload, m->s + off, len) != 0)) {
        fprintf(stderr, "fuzz: %s returned a payload of %zu bytes, not the %zu bytes sent\n", fn,
                len, want_len);
        abort();
    }
    free(payload);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    psi_net_conn c;
    frame_model m;
    int sv[2], ctl;

    if (size < 1 || size - 1 > FRAME_INPUT_MAX)
        return 0;
    ctl = data[0];
    m = (frame_model){ data + 1, size - 1, 0 };
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("fuzz: socketpair");
        abort();
    }
    if (feed(sv[1], m.s, m.n) != 0 || fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) != 0) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    // as psi_net_accept leaves it (net_addr.c), without a socket name
    memset(&c, 0, sizeof c);
    c.fd = sv[0];
    c.timeout_ms = FRAME_TIMEOUT_MS;
    snprintf(c.peer, sizeof c.peer, "fuzz peer");
    for (int i = 0; i < RECV_CALLS; i++) {
        uint64_t plen;
        frame_model peek = m;
        int head = model_head(&peek, &plen);
        // bit 0: expect what comes next (to go deep), else a type by number
        int expect = (ctl & 1) && head > 0 ? head : 1 + ((ctl >> 1) + i) % PSI_NET_FRAME_KEEPALIVE;
        size_t max_len = max_lens[((size_t)(ctl >> 4) + (size_t)i) % FUZZ_COUNT(max_lens)];
        int rc = recv_one(&c, &m, expect, max_len);

        if (rc != PSI_NET_OK && rc != PSI_NET_EFRAME && rc != PSI_NET_EPEER)
            break;
    }
    psi_net_close(&c);
    close(sv[1]);
    return 0;
}
