/* The TCP transport of `shardpsi server` and `shardpsi client`; see net.h. */
#include "net.h"
#include "net_sock.h"
#include "app_util.h"
#include "net_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define NET_HDR PSI_NET_HEADER_BYTES
// Largest payload slice per send or recv call, and the progress step.
#define NET_CHUNK ((size_t)1 << 20)
// The receive buffer: headers, keepalives, ERROR messages and the start of a
// payload read along with its header.
#define NET_RX_CAP ((size_t)64 << 10)
// psi_net_send_error: at most this long sending, then as long draining.
#define NET_ERROR_WAIT_MS 1000
// psi_net_close: draining, when unread bytes are found.
#define NET_CLOSE_DRAIN_MS 200

/* One send or receive of a frame: what error messages say, and the timer. */
typedef struct net_op {
    psi_net_conn *c;
    int sending;          // psi_net_send (else psi_net_recv)
    int type;             // the frame sent or expected
    int in_payload;       // receiving: the header has been read
    uint64_t done, total; // payload bytes moved so far, of total
    uint64_t reported;    // done at the last progress call
    double last_move;     // psi_app_now_ms() when a byte last moved either way
    // A payload in a file (psi_net_send_fd, psi_net_recv_fd): fd, and a
    // window of it of NET_CHUNK bytes (win_len bytes at payload offset
    // win_at); fd -1 for a payload in memory.
    int fd;
    uint64_t fd_at;       // the payload's offset in fd
    uint8_t *win;
    uint64_t win_at;
    size_t win_len;
} net_op;

int psi_net_poll(int fd, short events, double deadline, short *revents)
{
    for (;;) {
        double left = deadline - psi_app_now_ms();
        struct pollfd p = { .fd = fd, .events = events };
        int r;

        if (left <= 0)
            return 0;
        r = poll(&p, 1, left >= INT_MAX - 1 ? INT_MAX : (int)left + 1);
        if (r > 0) {
            *revents = p.revents;
            return 1;
        }
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

int psi_net_fail(psi_net_conn *c, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return code;
}

/* Returns: the article for a frame name ("an error frame"). */
static const char *net_article(const char *name)
{
    return strchr("aeiou", name[0]) != NULL ? "an" : "a";
}

const char *psi_net_frame_name(int type)
{
    static const char *const names[] = {
        "unknown", "hello", "accept", "setup", "request", "response",
        "permutation", "done", "error", "keepalive", "payload head", "payloads",
        "result"
    };

    return type >= PSI_NET_FRAME_HELLO && type <= PSI_NET_FRAME_LAST ? names[type]
                                                                          : names[0];
}

/* Writes a frame header: type, then the length big-endian. */
static void net_put_header(uint8_t *p, int type, uint64_t len)
{
    p[0] = (uint8_t)type;
    psi_app_store_be(p + 1, len, 8);
}

/* Reads a frame header (see net_put_header). */
static void net_get_header(const uint8_t *p, int *type, uint64_t *len)
{
    *type = p[0];
    *len = psi_app_load_be(p + 1, 8);
}

/* Says where an operation stands, for error messages. */
static void op_where(const net_op *op, char *buf, size_t cap)
{
    const char *name = psi_net_frame_name(op->type);

    if (op->sending)
        snprintf(buf, cap, "after we sent %llu of %llu bytes of the %s frame",
                 (unsigned long long)op->done, (unsigned long long)op->total, name);
    else if (op->in_payload)
        snprintf(buf, cap, "after %llu of %llu bytes of the %s frame",
                 (unsigned long long)op->done, (unsigned long long)op->total, name);
    else
        snprintf(buf, cap, "while we were waiting for %s %s frame", net_article(name), name);
}

/* Fails an operation on errno e (0: the peer closed).  Returns: the code. */
static int op_fail_errno(net_op *op, int e)
{
    char where[160];

    op_where(op, where, sizeof where);
    if (e == 0 || e == ECONNRESET || e == EPIPE || e == ENOTCONN)
        return psi_net_fail(op->c, PSI_NET_ECLOSED, "the peer (%s) closed the connection %s",
                        op->c->peer, where);
    return psi_net_fail(op->c, PSI_NET_EIO, "the connection to the peer (%s) failed %s: %s",
                    op->c->peer, where, strerror(e));
}

/* Fails an operation on TLS's code rc, whose message the I/O layer left in
 * c->err: says where.  Returns: rc. */
static int op_fail_tls(net_op *op, int rc)
{
    psi_net_conn *c = op->c;
    size_t n = strlen(c->err);
    char where[160];

    op_where(op, where, sizeof where);
    snprintf(c->err + n, sizeof c->err - n, " (%s)", where);
    return rc;
}

/* Fails when c->deadline_ms has passed.  Returns: 0 or PSI_NET_ETIMEOUT. */
static int net_deadline(psi_net_conn *c, const net_op *op)
{
    char where[160];

    if (c->deadline_ms <= 0 || psi_app_now_ms() < c->deadline_ms)
        return 0;
    if (op == NULL)
        snprintf(where, sizeof where, "before we began");
    else
        op_where(op, where, sizeof where);
    return psi_net_fail(c, PSI_NET_ETIMEOUT, "the time allowed for this stage with the peer "
                        "(%s) ran out %s", c->peer, where);
}

/* Waits until the socket is ready for events, at most until the operation
 * has been idle for timeout_ms, and not past c->deadline_ms.  Returns: 0 or
 * an error code. */
static int op_wait(net_op *op, short events, short *revents)
{
    psi_net_conn *c = op->c;
    char where[160];
    double until = op->last_move + c->timeout_ms;
    int r = net_deadline(c, op);

    if (r != 0)
        return r;
    if (c->deadline_ms > 0 && c->deadline_ms < until)
        until = c->deadline_ms;
    r = psi_net_io_poll(c, events, until, revents);
    if (r > 0)
        return 0;
    if (r < 0)
        return op_fail_errno(op, errno);
    if ((r = net_deadline(c, op)) != 0)
        return r;
    op_where(op, where, sizeof where);
    return psi_net_fail(c, PSI_NET_ETIMEOUT, "no data %s the peer (%s) for %g s %s (--timeout)",
                    op->sending ? "to or from" : "from", c->peer, c->timeout_ms / 1000.0, where);
}

/* One read of at most cap bytes into buf.  Returns: 0 (*got = 0 when
 * nothing was there) or an error code. */
static int op_read(net_op *op, uint8_t *buf, size_t cap, size_t *got)
{
    int e = 0, rc = psi_net_io_read(op->c, buf, cap, got, &e);

    if (rc == 1)
        return op_fail_errno(op, e);
    if (rc != 0)
        return op_fail_tls(op, rc);
    if (*got > 0)
        op->last_move = psi_app_now_ms();
    return 0;
}

/* Calls progress at most every NET_CHUNK bytes, and always when final. */
static void op_progress(net_op *op, psi_net_progress_fn fn, void *arg, int final)
{
    if (fn == NULL || (!final && op->done - op->reported < NET_CHUNK))
        return;
    op->reported = op->done;
    fn(arg, op->done, op->total);
}

/* Drops the first n bytes of the receive buffer. */
static void rx_consume(psi_net_conn *c, size_t n)
{
    memmove(c->rx, c->rx + n, c->rx_len - n);
    c->rx_len -= n;
}

/* Reads what is there into the receive buffer (nothing if it would block).
 * Callers need at most NET_HDR + PSI_NET_MSG_MAX bytes in it, so there
 * is always room.  Returns: 0 or an error code. */
static int rx_read(net_op *op)
{
    psi_net_conn *c = op->c;
    size_t got;
    int rc;

    if (c->rx_cap < NET_RX_CAP) {
        uint8_t *p = realloc(c->rx, NET_RX_CAP);

        if (p == NULL)
            return psi_net_fail(c, PSI_NET_ENOMEM, "out of memory for the receive buffer");
        c->rx = p;
        c->rx_cap = NET_RX_CAP;
    }
    rc = op_read(op, c->rx + c->rx_len, c->rx_cap - c->rx_len, &got);
    c->rx_len += got;
    return rc;
}

/* Checks what any header must satisfy, whatever the caller expects. */
static int net_check_header(psi_net_conn *c, int type, uint64_t len)
{
    if (type < PSI_NET_FRAME_HELLO || type > PSI_NET_FRAME_LAST)
        return psi_net_fail(c, PSI_NET_EFRAME, "the peer (%s) sent a frame of unknown type %d%s",
                        c->peer, type, c->tls == NULL && type >= 0x14 && type <= 0x17
                                           ? " (it looks like TLS: does the peer use TLS "
                                             "and we not?)" : "");
    if (type == PSI_NET_FRAME_KEEPALIVE && len != 0)
        return psi_net_fail(c, PSI_NET_EFRAME,
                        "the peer (%s) sent a keepalive frame with a payload of %llu bytes "
                        "(it must be empty)", c->peer, (unsigned long long)len);
    if (type == PSI_NET_FRAME_KEEPALIVE && c->no_keepalive)
        return psi_net_fail(c, PSI_NET_EFRAME, "the peer (%s) sent a keepalive before the "
                            "handshake was accepted", c->peer);
    if (type == PSI_NET_FRAME_ERROR && len > PSI_NET_MSG_MAX)
        return psi_net_fail(c, PSI_NET_EFRAME,
                        "the peer (%s) sent an error frame of %llu bytes, larger than the "
                        "limit %d", c->peer, (unsigned long long)len, PSI_NET_MSG_MAX);
    return 0;
}

/* Fails with the peer's ERROR message, escaped for a terminal (cut where
 * c->err ends). */
static int net_peer_error(psi_net_conn *c, const uint8_t *msg, size_t len)
{
    static const char prefix[] = "the peer reported: ";
    size_t n = sizeof prefix - 1;

    memcpy(c->err, prefix, n);
    psi_net_escape(c->err + n, sizeof c->err - n, msg, len);
    return PSI_NET_EPEER;
}

/* Handles the frames at the head of the receive buffer that are nobody's
 * answer: skips keepalives, rejects bad headers, fails on a complete ERROR
 * frame.  Out: *head, the type of the frame now first in the buffer (0 when
 * no complete header is there), *head_len its payload length.  Returns: 0
 * or an error code. */
static int rx_scan(psi_net_conn *c, int *head, uint64_t *head_len)
{
    *head = 0;
    *head_len = 0;
    while (c->rx_len >= NET_HDR) {
        int type, rc;
        uint64_t len;

        net_get_header(c->rx, &type, &len);
        if ((rc = net_check_header(c, type, len)) != 0)
            return rc;
        if (type == PSI_NET_FRAME_KEEPALIVE) {
            rx_consume(c, NET_HDR);
            continue;
        }
        *head = type;
        *head_len = len;
        if (type == PSI_NET_FRAME_ERROR && c->rx_len - NET_HDR >= len) {
            rc = net_peer_error(c, c->rx + NET_HDR, (size_t)len);
            rx_consume(c, NET_HDR + (size_t)len);
            return rc;
        }
        break;
    }
    return 0;
}

/* Whether the send loop should read: until a frame for the next
 * psi_net_recv is at the head of the buffer (which bounds the buffer). */
static int rx_wanted(int head)
{
    return head == 0 || head == PSI_NET_FRAME_ERROR;
}

/* Sending from a file: makes the window hold the payload's bytes at
 * op->done (read with pread, so the descriptor's offset is left alone).
 * Returns: 0 or PSI_NET_EFILE. */
static int window_fill(net_op *op)
{
    uint64_t left = op->total - op->done;
    size_t want = left < NET_CHUNK ? (size_t)left : NET_CHUNK, got = 0;

    if (op->done >= op->win_at && op->done < op->win_at + op->win_len)
        return 0;
    while (got < want) {
        ssize_t r = pread(op->fd, op->win + got, want - got, (off_t)(op->fd_at + op->done + got));

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return psi_net_fail(op->c, PSI_NET_EFILE, "cannot read the %s frame's payload "
                                "from its file: %s", psi_net_frame_name(op->type),
                                r < 0 ? strerror(errno) : "the file is shorter than the frame");
        got += (size_t)r;
    }
    op->win_at = op->done;
    op->win_len = got;
    return 0;
}

/* One sendmsg of the rest of the header and at most NET_CHUNK payload
 * bytes.  In-Out: *hsent, header bytes sent; op->done.  Returns: 0 or an
 * error code. */
static int send_some(net_op *op, const uint8_t *hdr, size_t *hsent, const uint8_t *payload)
{
    uint64_t left = op->total - op->done;
    const uint8_t *p = left > 0 && payload != NULL ? payload + op->done : NULL;
    size_t n;
    int e = 0, rc;

    if (op->fd >= 0 && left > 0) {
        if ((rc = window_fill(op)) != 0)
            return rc;
        p = op->win + (op->done - op->win_at);
        left = op->win_at + op->win_len - op->done;
    }
    rc = psi_net_io_write(op->c, hdr + *hsent, NET_HDR - *hsent, left > 0 ? p : NULL,
                          left < NET_CHUNK ? (size_t)left : NET_CHUNK, &n, &e);
    if (rc == 1)
        return op_fail_errno(op, e);
    if (rc != 0)
        return op_fail_tls(op, rc);
    if (n > 0)
        op->last_move = psi_app_now_ms();
    size_t h = NET_HDR - *hsent < (size_t)n ? NET_HDR - *hsent : (size_t)n;
    *hsent += h;
    op->done += (size_t)n - h;
    return 0;
}

/* After a send failed because the peer closed: if the peer said why first
 * (an ERROR frame already received), fails with that instead.  Returns: rc
 * or PSI_NET_EPEER. */
static int send_closed(net_op *op, int rc)
{
    psi_net_conn *c = op->c;
    char keep[sizeof c->err];
    uint64_t len;
    int head, r;

    memcpy(keep, c->err, sizeof keep);
    for (;;) {
        size_t before;

        if ((r = rx_scan(c, &head, &len)) == PSI_NET_EPEER)
            return r;
        if (r != 0 || !rx_wanted(head))
            break;
        before = c->rx_len;
        if ((r = rx_read(op)) == PSI_NET_ETLS || r == PSI_NET_EINTEGRITY)
            return r; // TLS says why (the peer refused our certificate, say)
        if (r != 0 || c->rx_len == before)
            break;
    }
    memcpy(c->err, keep, sizeof keep);
    return rc;
}

/* The send loop: writes header and payload, and meanwhile reads and
 * handles what the peer sends (see net.h).  Returns: 0 or an error. */
static int send_frame(net_op *op, const uint8_t *hdr, const uint8_t *payload,
                      psi_net_progress_fn fn, void *arg, size_t *hsent)
{
    psi_net_conn *c = op->c;
    uint64_t len;
    int head, rc = rx_scan(c, &head, &len);

    while (rc == 0 && (*hsent < NET_HDR || op->done < op->total)) {
        short rev = 0;
        int want = rx_wanted(head);

        rc = op_wait(op, want ? POLLOUT | POLLIN : POLLOUT, &rev);
        if (rc == 0 && want && (rev & (POLLIN | POLLERR | POLLHUP)) != 0) {
            rc = rx_read(op);
            if (rc == 0)
                rc = rx_scan(c, &head, &len);
        }
        if (rc == 0 && (rev & (POLLOUT | POLLERR | POLLHUP)) != 0) {
            rc = send_some(op, hdr, hsent, payload);
        }
        if (rc == 0)
            op_progress(op, fn, arg, 0);
    }
    if (rc == PSI_NET_ECLOSED)
        rc = send_closed(op, rc);
    return rc;
}

/* Starts an operation's bookkeeping. */
static void op_init(net_op *op, psi_net_conn *c, int sending, int type, uint64_t total)
{
    memset(op, 0, sizeof *op);
    op->fd = -1;
    op->c = c;
    op->sending = sending;
    op->type = type;
    op->total = total;
    op->last_move = psi_app_now_ms();
}

/* Returns: the code a dead or closed connection gives, or 0. */
static int net_unusable(psi_net_conn *c)
{
    if (c->broken)
        return c->broken_code;
    if (c->fd < 0)
        return psi_net_fail(c, PSI_NET_EIO, "the connection is closed");
    return 0;
}

/* psi_net_send and psi_net_send_fd: the payload is payload[0..len), or
 * the len bytes of fd at offset at when fd >= 0. */
static int net_send(psi_net_conn *c, int type, const uint8_t *payload, int fd, uint64_t at,
                    uint64_t len, psi_net_progress_fn progress, void *progress_arg)
{
    uint8_t hdr[NET_HDR];
    size_t hsent = 0;
    net_op op;
    int rc = net_unusable(c);

    if (rc != 0 || (rc = net_deadline(c, NULL)) != 0)
        return rc;
    net_put_header(hdr, type, len);
    op_init(&op, c, 1, type, len);
    op.fd = fd;
    op.fd_at = at;
    if (fd >= 0 && len > 0 && (op.win = malloc(NET_CHUNK)) == NULL)
        return psi_net_fail(c, PSI_NET_ENOMEM, "out of memory for sending a frame");
    rc = send_frame(&op, hdr, payload, progress, progress_arg, &hsent);
    free(op.win);
    if (rc == 0) {
        op_progress(&op, progress, progress_arg, 1);
    } else if (hsent > 0) {
        // part of a frame is out: nothing more can be framed on this stream
        c->broken = 1;
        c->broken_code = rc;
    }
    return rc;
}

int psi_net_send(psi_net_conn *c, int type, const uint8_t *payload, size_t len,
                     psi_net_progress_fn progress, void *progress_arg)
{
    return net_send(c, type, payload, -1, 0, len, progress, progress_arg);
}

int psi_net_send_fd(psi_net_conn *c, int type, int fd, uint64_t len,
                    psi_net_progress_fn progress, void *progress_arg)
{
    return net_send(c, type, NULL, fd, 0, len, progress, progress_arg);
}

int psi_net_send_fd_at(psi_net_conn *c, int type, int fd, uint64_t at, uint64_t len,
                       psi_net_progress_fn progress, void *progress_arg)
{
    return net_send(c, type, NULL, fd, at, len, progress, progress_arg);
}

/* Reads until a frame for the caller heads the receive buffer (skipping
 * keepalives, failing on ERROR frames).  Out: *type, *len of its header,
 * still in the buffer.  Returns: 0 or an error code. */
static int recv_header(net_op *op, int *type, uint64_t *len)
{
    for (;;) {
        short rev;
        int rc = rx_scan(op->c, type, len);

        if (rc != 0 || !rx_wanted(*type))
            return rc;
        if ((rc = op_wait(op, POLLIN, &rev)) != 0 || (rc = rx_read(op)) != 0)
            return rc;
    }
}

/* Receiving into a file: writes len bytes of buf to op->fd.  Returns: 0 or
 * PSI_NET_EFILE. */
static int file_write(net_op *op, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t r = write(op->fd, buf, len);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return psi_net_fail(op->c, PSI_NET_EFILE, "cannot write the %s frame from the "
                                "peer (%s) to its file: %s", psi_net_frame_name(op->type),
                                op->c->peer, r < 0 ? strerror(errno) : "nothing written");
        buf += r;
        len -= (size_t)r;
    }
    return 0;
}

/* Receives the payload: first what the receive buffer holds, then straight
 * from the socket, into *bufp (grown as bytes arrive) or, when op->fd >= 0,
 * through the window into the file.  Returns: 0 or an error code. */
static int recv_payload(net_op *op, uint8_t **bufp, size_t *cap, psi_net_progress_fn fn,
                        void *arg)
{
    psi_net_conn *c = op->c;
    size_t n = c->rx_len < op->total ? c->rx_len : (size_t)op->total;
    int rc = 0;

    if (op->fd >= 0)
        rc = file_write(op, c->rx, n);
    else
        memcpy(*bufp, c->rx, n);
    if (rc != 0)
        return rc;
    rx_consume(c, n);
    op->done = n;
    while (op->done < op->total) {
        uint64_t left = op->total - op->done;
        size_t got, want = left < NET_CHUNK ? (size_t)left : NET_CHUNK;
        uint8_t *dst = op->win;
        short rev;

        // The buffer grows with the bytes that arrived, never to the
        // length the header claims before they have.
        if (op->fd < 0 && op->done + want > *cap) {
            size_t grow = *cap > op->total - *cap ? (size_t)op->total : 2 * *cap;
            uint8_t *p = realloc(*bufp, grow);
            if (p == NULL)
                return psi_net_fail(c, PSI_NET_ENOMEM, "out of memory for a frame of %llu "
                                    "bytes", (unsigned long long)op->total);
            *bufp = p;
            *cap = grow;
        }
        if (op->fd < 0)
            dst = *bufp + op->done;
        rc = op_wait(op, POLLIN, &rev);
        if (rc == 0)
            rc = op_read(op, dst, want, &got);
        if (rc == 0 && op->fd >= 0)
            rc = file_write(op, dst, got);
        if (rc != 0)
            return rc;
        op->done += got;
        op_progress(op, fn, arg, 0);
    }
    op_progress(op, fn, arg, 1);
    return 0;
}

/* Reads the header of the next frame, which must be of type expect with at
 * most max_len bytes, and consumes it.  Out: *plen.  Returns: 0 or an
 * error code. */
static int recv_start(net_op *op, psi_net_conn *c, int expect, uint64_t max_len,
                      uint64_t *plen)
{
    const char *want = psi_net_frame_name(expect);
    int type, rc;

    if ((rc = net_unusable(c)) != 0 || (rc = net_deadline(c, NULL)) != 0)
        return rc;
    op_init(op, c, 0, expect, 0);
    if ((rc = recv_header(op, &type, plen)) != 0)
        return rc;
    if (type != expect)
        return psi_net_fail(c, PSI_NET_EFRAME, "expected %s %s frame from the peer (%s), got %s "
                        "%s frame", net_article(want), want, c->peer,
                        net_article(psi_net_frame_name(type)), psi_net_frame_name(type));
    if (*plen > max_len) // before allocating anything
        return psi_net_fail(c, PSI_NET_EFRAME, "the %s frame of %llu bytes from the peer (%s) "
                        "is larger than the limit %llu", want, (unsigned long long)*plen,
                        c->peer, (unsigned long long)max_len);
    rx_consume(c, NET_HDR);
    op->in_payload = 1;
    op->total = *plen;
    return 0;
}

int psi_net_recv_fd(psi_net_conn *c, int expect, uint64_t max_len, int fd, uint64_t *len,
                    psi_net_progress_fn progress, void *progress_arg)
{
    uint64_t plen = 0;
    net_op op;
    int rc = recv_start(&op, c, expect, max_len, &plen);

    *len = 0;
    if (rc != 0)
        return rc;
    op.fd = fd;
    if ((op.win = malloc(NET_CHUNK)) == NULL)
        return psi_net_fail(c, PSI_NET_ENOMEM, "out of memory for receiving a frame");
    rc = recv_payload(&op, NULL, NULL, progress, progress_arg);
    free(op.win);
    if (rc == 0)
        *len = plen;
    return rc;
}

int psi_net_recv(psi_net_conn *c, int expect, size_t max_len, uint8_t **payload,
                     size_t *len, psi_net_progress_fn progress, void *progress_arg)
{
    uint64_t plen = 0;
    uint8_t *buf;
    size_t cap;
    net_op op;
    int rc;

    *payload = NULL;
    *len = 0;
    if ((rc = recv_start(&op, c, expect, max_len, &plen)) != 0)
        return rc;
    // At first what fits in the receive buffer's slice; then see recv_payload.
    cap = plen < NET_CHUNK ? (plen > 0 ? (size_t)plen : 1) : NET_CHUNK;
    if ((buf = malloc(cap)) == NULL)
        return psi_net_fail(c, PSI_NET_ENOMEM, "out of memory for the %s frame of %llu bytes",
                            psi_net_frame_name(expect), (unsigned long long)plen);
    if ((rc = recv_payload(&op, &buf, &cap, progress, progress_arg)) != 0) {
        free(buf);
        return rc;
    }
    *payload = buf;
    *len = (size_t)plen;
    return 0;
}

/* Marks the connection broken after a keepalive failed on errno e
 * (ETIMEDOUT: the deadline passed; < 0: TLS's code, with its message). */
static void keepalive_broken(psi_net_conn *c, int e)
{
    int code;

    if (e < 0) {
        size_t n = strlen(c->err);

        snprintf(c->err + n, sizeof c->err - n, " (while we sent a keepalive)");
        code = e;
    } else if (e == ETIMEDOUT)
        code = psi_net_fail(c, PSI_NET_ETIMEOUT, "the peer (%s) took no data for %g s while we "
                        "sent a keepalive (--timeout)", c->peer, c->timeout_ms / 1000.0);
    else if (e == EPIPE || e == ECONNRESET || e == ENOTCONN)
        code = psi_net_fail(c, PSI_NET_ECLOSED, "the peer (%s) closed the connection (noticed "
                        "while we sent a keepalive)", c->peer);
    else
        code = psi_net_fail(c, PSI_NET_EIO, "sending a keepalive to the peer (%s) failed: %s",
                        c->peer, strerror(e));
    c->broken_code = code;
    c->broken = 1;
}

void psi_net_keepalive(psi_net_conn *c, int interval_ms)
{
    uint8_t hdr[NET_HDR];
    double now = psi_app_now_ms();
    int e;

    if (c->fd < 0 || c->broken || now - c->last_keepalive_ms < interval_ms)
        return;
    net_put_header(hdr, PSI_NET_FRAME_KEEPALIVE, 0);
    // all nine bytes or a broken connection: a partial frame must not stay
    if ((e = psi_net_io_write_all(c, hdr, sizeof hdr, now + c->timeout_ms)) != 0)
        keepalive_broken(c, e);
    else
        c->last_keepalive_ms = psi_app_now_ms();
}

/* After shutdown(SHUT_WR): reads and discards until the peer's EOF, for at
 * most ms.  Closing a socket with unread received bytes makes the kernel
 * reset the connection, which drops our own bytes not yet transmitted (an
 * ERROR frame among them) and may make the peer's reads fail before it
 * reads them; once the peer has closed too, close() is a clean FIN. */
static void net_drain(int fd, int ms)
{
    uint8_t buf[16384];
    double deadline = psi_app_now_ms() + ms;
    short rev;

    for (;;) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);

        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
            return;
        if (n > 0 && psi_app_now_ms() >= deadline)
            return;
        if (n < 0 && errno != EINTR && psi_net_poll(fd, POLLIN, deadline, &rev) <= 0)
            return;
    }
}

void psi_net_send_error(psi_net_conn *c, const char *msg)
{
    uint8_t frame[NET_HDR + PSI_NET_MSG_MAX];
    size_t n = strlen(msg);

    if (c->fd < 0)
        return;
    if (n > PSI_NET_MSG_MAX) {
        n = PSI_NET_MSG_MAX;
        while (n > 0 && ((uint8_t)msg[n] & 0xc0) == 0x80) // not inside a UTF-8 sequence
            n--;
    }
    if (!c->broken) { // after a partial frame, an ERROR frame would be misread
        net_put_header(frame, PSI_NET_FRAME_ERROR, n);
        memcpy(frame + NET_HDR, msg, n);
        (void)psi_net_io_write_all(c, frame, NET_HDR + n, psi_app_now_ms() + NET_ERROR_WAIT_MS);
    }
    psi_net_io_tls_end(c); // close_notify, then TCP's own close below
    shutdown(c->fd, SHUT_WR);
    net_drain(c->fd, NET_ERROR_WAIT_MS);
    if (!c->broken) { // c->err stays: it may be what the caller reports
        c->broken = 1;
        c->broken_code = PSI_NET_EIO;
    }
}

void psi_net_close(psi_net_conn *c)
{
    if (c->fd >= 0) {
        uint8_t b[512];
        ssize_t n;

        psi_net_io_tls_end(c);
        do
            n = recv(c->fd, b, sizeof b, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n > 0) { // unread bytes: close gracefully (see net_drain)
            shutdown(c->fd, SHUT_WR);
            net_drain(c->fd, NET_CLOSE_DRAIN_MS);
        }
        close(c->fd);
    }
    free(c->rx);
    c->rx = NULL;
    c->rx_len = c->rx_cap = 0;
    c->fd = -1;
}
